// The dashboard's only way to the node: same-origin fetches with the root key in the
// Authorization header. The key lives in this module and in the tab's sessionStorage (gone when
// the tab closes); it never goes into a URL, a cookie or storage that outlives the tab.

const storageName = "keyraft.rootKey";
let rootKey = sessionStorage.getItem(storageName);

export class ApiError extends Error {
  constructor(status, code, message, requestId) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

export function signedIn() {
  return rootKey !== null;
}

export function signIn(key) {
  rootKey = key;
  sessionStorage.setItem(storageName, key);
}

export function signOut() {
  rootKey = null;
  sessionStorage.removeItem(storageName);
}

async function call(method, path, { query, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, String(value));
  }
  const headers = { authorization: `Bearer ${rootKey ?? ""}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  const text = await response.text();
  const data = text === "" ? {} : JSON.parse(text);
  if (!response.ok) {
    const error = data.error ?? {};
    throw new ApiError(response.status, error.code ?? "ERROR", error.message ?? response.statusText, error.requestId);
  }
  return data;
}

export const get = (path, query) => call("GET", path, { query });
export const post = (path, body) => call("POST", path, { body });
