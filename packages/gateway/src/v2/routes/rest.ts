// The v2 route plugins of identities, permissions and roles, rate limiting, analytics and the
// audit log.

import type { V2RoutePlugin } from "../route.js";
import { analyticsRoutes } from "./analytics.js";
import { auditRoutesV2 } from "./audit.js";
import { identityRoutes } from "./identities.js";
import { overrideRoutes } from "./overrides.js";
import { permissionRoutes } from "./permissions.js";
import { ratelimitRoutes } from "./ratelimit.js";

export const restRoutePlugins: readonly V2RoutePlugin[] = [
  identityRoutes,
  permissionRoutes,
  ratelimitRoutes,
  overrideRoutes,
  analyticsRoutes,
  auditRoutesV2,
];
