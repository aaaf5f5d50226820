/**
 * A chat platform for relay-level tests (the network boundary of a channel adapter): it shows what a
 * user would see, message id -> text, with ids `<chat>/<n>`.
 */
import type { ChatAdapter } from "../../internal/channels/common/stream-relay.js";

export class FakeChatPlatform implements ChatAdapter {
  shown = new Map<string, string>();
  private seq = 0;
  constructor(readonly limits = { maxLength: 100 }) {}
  async send(chat: string, text: string): Promise<string> {
    const id = `${chat}/${++this.seq}`;
    this.shown.set(id, text);
    return id;
  }
  async edit(_chat: string, id: string, text: string): Promise<void> {
    this.shown.set(id, text);
  }
  async delete(_chat: string, id: string): Promise<void> {
    this.shown.delete(id);
  }
  async typing(): Promise<void> {}
}
