import type { NewWebhookEvent, WebhookEventType } from './catalogue.js';

/**
 * An event one of whose `data` fields only the database knows as it writes the event, in the same
 * statement (a count it makes, an id it finds): the builder's JSON cut around that field's value.
 * The statement writes `head`, the value as JSON, then `tail` (PostgreSQL:
 * `head || to_json(value)::text || tail`): the builder's JSON with the value in place.
 */
export interface DatabaseFilledEvent {
  id: string;
  type: WebhookEventType;
  head: string;
  tail: string;
}

/**
 * `event` (built with `placeholder` as `field`'s value) cut around that value. A key of `data`
 * occurs once in its JSON: inside a string value every quote is escaped.
 */
export function filledByDatabase(
  event: NewWebhookEvent,
  field: string,
  placeholder: string | number,
): DatabaseFilledEvent {
  const key = `${JSON.stringify(field)}:`;
  const value = JSON.stringify(placeholder);
  const at = event.data.indexOf(key) + key.length;
  if (at < key.length || !event.data.startsWith(value, at))
    throw new Error(`${event.type} has no ${field} ${value} to fill in`);
  return {
    id: event.id,
    type: event.type,
    head: event.data.slice(0, at),
    tail: event.data.slice(at + value.length),
  };
}
