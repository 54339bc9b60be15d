/** A key that cannot be read, used or made: the message names the file or row and the field. */
export class KeyError extends Error {
  override name = 'KeyError';
}
