/**
 * Typed backup and restore errors (their own module so backup-key.ts can throw them without an
 * import cycle through backup.ts).
 */
export class BackupError extends Error {
  constructor(
    readonly code:
      | "BACKUP_SOURCE"
      | "BACKUP_MANIFEST"
      | "BACKUP_CHECKSUM"
      | "BACKUP_LIVE"
      | "BACKUP_TARGET"
      | "BACKUP_UNSAFE",
    message: string,
  ) {
    super(message);
    this.name = "BackupError";
  }
}
