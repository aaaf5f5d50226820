/**
 * The SessionPost port: "put this message into the chat session the owner asked from". A reminder
 * asked in the web chat or in `familiar chat` has no channel target (those chats are sessions of the
 * gateway, not chat platforms); its reply goes back into that session's transcript and to the
 * clients showing it. Cron depends on this port; the gateway implements it (it knows the live
 * connections), and the wiring root hands it over.
 */

/** One message posted into a session from outside a turn (a scheduled job's reply). */
export interface SessionPostMessage {
  /** The session it goes into (`agent:main:gateway:web-1`). */
  sessionKey: string;
  text: string;
  /** The scheduled job whose run wrote it. */
  jobId: string;
  /**
   * The session the run's turn ran in (`cron:<job>`): its taint comes with the text, so a clean
   * session that receives a tainted run's reply becomes tainted too (docs/security.md).
   */
  runSessionKey: string;
}

/** What became of a posted message. */
export interface SessionPostResult {
  /** Stored in the session's transcript (false: the session is gone, or was never there). */
  kept: boolean;
  /** How many connected clients showing that session were sent it (0: nobody is there). */
  live: number;
}

export interface SessionPost {
  /**
   * Stores `text` as an assistant message of the session (after any turn running in it, never in
   * the middle of one) and pushes it to the clients showing that session. Never throws for a
   * missing session: `kept` is false.
   */
  post(m: SessionPostMessage): Promise<SessionPostResult>;
}
