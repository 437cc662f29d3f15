/**
 * Redis stores bytes, and a string goes to it as its UTF-8 form. A string with a lone surrogate
 * has none: it would be sent with U+FFFD in its place, and stored changed. Such strings are
 * refused. The check is native, and immediate for strings V8 holds one byte per character.
 */
export function hasUtf8Form(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

export const NO_UTF8_FORM = "has a lone surrogate, so no UTF-8 form (Redis would store U+FFFD in its place)";
