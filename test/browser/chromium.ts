// The headless Chromium the browser test drives. A fresh machine gets Debian's `chromium` package
// here (as root, through apt-get, the way CI's machine is set up); anywhere it cannot be found or
// installed, this throws with what to do: the browser test is never skipped.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Where Debian's package puts it; KEYRAFT_CHROMIUM names another binary. */
export const chromiumCandidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];
/** apt-get update and install together take about a minute on a fresh machine; allow ten. */
const installTimeoutMs = 10 * 60_000;

function found(): string | null {
  const configured = process.env["KEYRAFT_CHROMIUM"];
  if (configured !== undefined && configured !== "") {
    if (!existsSync(configured)) throw new Error(`KEYRAFT_CHROMIUM=${configured}: no such file`);
    return configured;
  }
  return chromiumCandidates.find((path) => existsSync(path)) ?? null;
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, {
    encoding: "utf8",
    timeout: installTimeoutMs,
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.slice(-2000);
    throw new Error(
      `${command} ${args.join(" ")} failed (${result.error?.message ?? `exit ${result.status}`}):\n${output}`,
    );
  }
}

/** The path of a Chromium binary, installing Debian's package first when there is none. */
export function ensureChromium(log: (line: string) => void = () => undefined): string {
  const present = found();
  if (present !== null) return present;
  const root = process.getuid?.() === 0;
  if (!root || !existsSync("/usr/bin/apt-get")) {
    throw new Error(
      "the browser test needs Chromium: install Debian's package (apt-get install -y chromium) or set KEYRAFT_CHROMIUM to a Chromium binary",
    );
  }
  log("installing Debian's chromium for the browser test (apt-get update; apt-get install -y chromium)");
  const lockWait = ["-o", "DPkg::Lock::Timeout=300"];
  run("apt-get", [...lockWait, "update"]);
  run("apt-get", [...lockWait, "install", "-y", "--no-install-recommends", "chromium", "fonts-dejavu-core"]);
  const installed = found();
  if (installed === null) throw new Error("apt-get installed chromium, yet no binary is at /usr/bin/chromium");
  return installed;
}
