/** The one-line refusal for Node `version` ("20.20.2" or "v20.20.2"), or null when it is new enough. */
export function refusal(version: string): string | null;
export const MIN_MAJOR: number;
export const MIN_MINOR: number;
