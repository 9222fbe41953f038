import { responses, text } from "./common.js";

export const createApiBody = { type: "object", properties: { name: text(3) }, required: ["name"] } as const;

export const createApiResponse = responses({
  type: "object",
  properties: { apiId: { type: "string" }, name: { type: "string" } },
  required: ["apiId"],
});

export const getApiQuery = { type: "object", properties: { apiId: text(1) }, required: ["apiId"] } as const;

export const getApiResponse = responses({
  type: "object",
  properties: { id: { type: "string" }, workspaceId: { type: "string" }, name: { type: "string" } },
  required: ["id", "workspaceId"],
});

export const livenessResponse = responses({
  type: "object",
  properties: {
    status: { type: "string" },
    services: {
      type: "object",
      properties: {
        metrics: { type: "string" },
        logger: { type: "string" },
        ratelimit: { type: "string" },
        usagelimit: { type: "string" },
      },
      required: ["metrics", "logger", "ratelimit", "usagelimit"],
    },
  },
  required: ["status", "services"],
});

export const deleteApiBody = { type: "object", properties: { apiId: text(1) }, required: ["apiId"] } as const;
