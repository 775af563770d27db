/** The command line is wrong (exit code 3): an unknown or misplaced flag, a missing argument, an unreadable file. */
export class UsageError extends Error {}
