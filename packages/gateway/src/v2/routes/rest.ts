// The v2 route plugins of identities, permissions and roles, rate limiting and analytics.

import type { V2RoutePlugin } from "../route.js";
import { analyticsRoutes } from "./analytics.js";
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
];
