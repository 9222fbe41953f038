import type { FastifyInstance } from "fastify";

/** Listens on PORT/HOST from the environment and closes cleanly on SIGTERM/SIGINT. */
export async function listenFromEnv(app: FastifyInstance): Promise<void> {
  const port = Number(process.env["PORT"]);
  if (!Number.isInteger(port) || port <= 0) throw new Error("PORT must be set");
  await app.listen({ port, host: process.env["HOST"] ?? "127.0.0.1" });
  const close = (): void => {
    void app.close().then(() => process.exit(0));
  };
  process.once("SIGTERM", close);
  process.once("SIGINT", close);
}
