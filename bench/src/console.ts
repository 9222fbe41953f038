// stderr output of the harness: log lines, and one progress line overwritten in place on a
// terminal (a plain line per update elsewhere). stdout is kept for the summary.
export interface Console {
  log(line: string): void;
  progress(line: string): void;
}

export function stderrConsole(stream: NodeJS.WriteStream = process.stderr): Console {
  const inPlace = stream.isTTY === true;
  let showing = false;
  return {
    log(line) {
      if (showing) {
        stream.write("\r\x1b[2K");
        showing = false;
      }
      stream.write(`${line}\n`);
    },
    progress(line) {
      if (inPlace) {
        stream.write(`\r\x1b[2K${line}`);
        showing = true;
      } else stream.write(`${line}\n`);
    },
  };
}
