/**
 * Text about a failure as anyone but the owner's logs may see it: URLs (a provider's base URL, the
 * owner's infrastructure) are replaced by a neutral word. Used where a failed turn's cause is stored
 * (the transcript, which API clients can read back) and where a turn's error is answered (issue 34).
 */
export function withoutUrls(message: string): string {
  return message.replace(/\b(?:https?|wss?):\/\/[^\s,;)'"]+/g, "(the model provider)");
}
