// Just enough Markdown for the documentation checks: headings and links outside code fences, and
// GitHub's anchor for a heading. No dependency: the checks must stay fast and run everywhere.

export interface Heading {
  level: number;
  text: string;
  anchor: string;
  line: number;
}

export interface Link {
  text: string;
  target: string;
  line: number;
}

/** The lines of a Markdown text with fenced code blocks blanked out (their `#` lines are no headings). */
export function proseLines(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split("\n").map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined) {
      if (fence === null) fence = marker;
      else if (marker.startsWith(fence)) fence = null;
      return "";
    }
    return fence === null ? line : "";
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(headingText: string): string {
  return headingText
    .replace(/`/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** Every ATX heading, with GitHub's anchor (a repeated anchor gets `-1`, `-2`, ...). */
export function headingsOf(markdown: string): Heading[] {
  const seen = new Map<string, number>();
  const headings: Heading[] = [];
  proseLines(markdown).forEach((line, index) => {
    const match = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line);
    if (match === null) return;
    const text = match[2] ?? "";
    const base = anchorOf(text);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    headings.push({
      level: (match[1] ?? "").length,
      text,
      anchor: count === 0 ? base : `${base}-${count}`,
      line: index + 1,
    });
  });
  return headings;
}

/** Every inline link `[text](target)` outside code fences and code spans; images included. */
export function linksOf(markdown: string): Link[] {
  const links: Link[] = [];
  proseLines(markdown).forEach((line, index) => {
    const prose = line.replace(/`[^`]*`/g, "``");
    for (const match of prose.matchAll(/\[([^\]]*)\]\(([^)\s]+)\)/g)) {
      links.push({ text: match[1] ?? "", target: match[2] ?? "", line: index + 1 });
    }
  });
  return links;
}
