// keys.getKey and keys.whoami: the key in v2's shape. The key is looked up first (a missing key
// beats a missing permission); whoami answers a missing permission like a missing key.

import { Type } from "@sinclair/typebox";
import { hashKey } from "../../auth/hash.js";
import { anyOf, holdsAny, requirePermissions } from "../auth.js";
import { Envelope, ok, v2Responses } from "../envelope.js";
import { ROOT_API_ID } from "@keyraft/core";
import { keyNotFoundDetail, requireRootAdmin } from "../keys-common.js";
import { isRootAdmin } from "../root-scope.js";
import { principalOf, type V2RoutePlugin } from "../route.js";
import { V2Error } from "../problem.js";
import { KeyId } from "../schemas/common.js";
import { KeyResponse, keyView } from "../schemas/key.js";
import { Closed } from "../validation.js";

const GetKeyBody = Closed({ keyId: KeyId, decrypt: Type.Optional(Type.Boolean({ default: false })) });
const WhoamiBody = Closed({ key: Type.String({ minLength: 1, maxLength: 512 }) });

export const keyReadRoutes: V2RoutePlugin = (app, ctx, done) => {
  const { state, nowMs } = ctx;

  app.post(
    "/keys.getKey",
    { schema: { body: GetKeyBody, response: v2Responses(Envelope(KeyResponse)) } },
    (request) => {
      const { keyId, decrypt } = request.body;
      const key = state.keys.get(keyId);
      if (key === undefined || !state.apis.has(key.apiId)) {
        throw new V2Error("key_not_found", "We could not find the requested key.");
      }
      const principal = principalOf(request);
      requirePermissions(principal, anyOf("api.*.read_key", `api.${key.apiId}.read_key`));
      requireRootAdmin(principal, key.apiId);
      // keyraft keeps no encrypted copies of keys: there is nothing to decrypt.
      if (decrypt === true) throw new V2Error("precondition_failed", "Vault hasn't been set up.");
      return ok(request, keyView(state, key, nowMs(), ctx.creditLeases?.shown));
    },
  );

  app.post(
    "/keys.whoami",
    { schema: { body: WhoamiBody, response: v2Responses(Envelope(KeyResponse)) } },
    (request) => {
      const key = state.keys.getByHash(hashKey(request.body.key));
      const missing = new V2Error("key_not_found", keyNotFoundDetail);
      if (key === undefined || !state.apis.has(key.apiId)) throw missing;
      const principal = principalOf(request);
      if (!holdsAny(principal, "api.*.read_key", `api.${key.apiId}.read_key`)) throw missing;
      // A root key is answered like a missing one to any caller without `*` (as a missing permission).
      if (key.apiId === ROOT_API_ID && !isRootAdmin(principal)) throw missing;
      return ok(request, keyView(state, key, nowMs(), ctx.creditLeases?.shown));
    },
  );
  done();
};
