import type { ChannelHandlers } from "../database.ts";

// The database announces every change to the customers, domains, applications and subscribers tables
// on this channel, whoever made it (migrations/0004_directory_changes.sql). The payload is the table's
// name; nothing here depends on it: any change may change what a platform path names.
export const DIRECTORY_CHANNEL = "keyplane_directory";

/** The directory channel's handler: `onChange` for each announcement. */
export function directoryChannel(onChange: () => void): ChannelHandlers {
  return { [DIRECTORY_CHANNEL]: () => onChange() };
}
