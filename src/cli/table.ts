// A plain text table for people: a header row in capitals, columns padded to their widest cell.
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("   ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}
