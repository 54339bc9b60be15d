import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got: its webhook-id, its event, and how it was answered (`cut`: the sender went away first). */
export interface WebhookAttempt {
  id: string;
  type: string;
  data: Record<string, unknown>;
  answered: number | 'cut';
  /** Whether its signature verified with the secret set by `setSecret` (false before one is set). */
  valid: boolean;
}

/** `ok` answers 204, `fail` 500, `hold` nothing until `cut()`. */
export type WebhookReceiverMode = 'fail' | 'hold' | 'ok';

/**
 * A Standard Webhooks receiver on a loopback port that records every request and verifies its
 * signature with the `standardwebhooks` package (not the kit's own code), answering as `mode` says.
 */
export async function webhookReceiver(initial: WebhookReceiverMode = 'ok') {
  const attempts: WebhookAttempt[] = [];
  const held: Array<{ attempt: WebhookAttempt; res: ServerResponse }> = [];
  const waiters: Array<() => void> = [];
  let verifier: Webhook | undefined;
  let mode = initial;
  const changed = () => {
    for (const w of waiters.splice(0)) w();
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let valid = false;
      try {
        verifier?.verify(body, req.headers as Record<string, string>);
        valid = verifier !== undefined;
      } catch {
        valid = false;
      }
      const event = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      const attempt: WebhookAttempt = {
        id: String(req.headers['webhook-id']),
        type: event.type,
        data: event.data,
        answered: 'cut',
        valid,
      };
      attempts.push(attempt);
      if (mode === 'hold') {
        held.push({ attempt, res });
      } else {
        attempt.answered = mode === 'ok' ? 204 : 500;
        res.writeHead(attempt.answered).end();
      }
      changed();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    attempts,
    held,
    /** The endpoint's secret (`whsec_…`), shown once when it was registered. */
    setSecret(secret: string) {
      verifier = new Webhook(secret);
    },
    setMode(next: WebhookReceiverMode) {
      mode = next;
    },
    /** Closes every held request's connection unanswered: to its sender, a failed attempt. */
    cut() {
      for (const { res } of held.splice(0)) res.socket?.destroy();
    },
    /** Resolves once `check` holds for what was received. */
    async until(check: () => boolean) {
      while (!check()) await new Promise<void>((ok) => waiters.push(ok));
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof webhookReceiver>>;
