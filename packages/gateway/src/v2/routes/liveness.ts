// GET /v2/liveness: no auth, no body; `message` is free text (upstream: "we're cooking").

import { Type } from "@sinclair/typebox";
import { Envelope, ok, v2Responses } from "../envelope.js";
import type { V2RoutePlugin } from "../route.js";

const LivenessData = Type.Object({ message: Type.String() });

export const livenessRoute: V2RoutePlugin = (app, _options, done) => {
  app.get(
    "/liveness",
    { schema: { security: [], response: v2Responses(Envelope(LivenessData)) }, config: { v2Public: true } },
    (request) => ok(request, { message: "we're cooking" }),
  );
  done();
};
