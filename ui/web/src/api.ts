// The page's API client: Connect over the agent's own origin, binary
// protobuf, the bearer token from session storage in an Authorization
// header (never in a URL, never in a cookie).
import { createClient, ConnectError, Code, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ReservationService } from "./gen/ledgerd/v1/reservation_pb";
import { ResourceService } from "./gen/ledgerd/v1/resource_pb";
import { RejectionSchema, type Rejection } from "./gen/ledgerd/v1/types_pb";

const tokenKey = "ledgerd.token";

/** The stored token, or null when signed out. "" means "no authentication". */
export function storedToken(): string | null {
  return sessionStorage.getItem(tokenKey);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(tokenKey);
  else sessionStorage.setItem(tokenKey, token);
}

const bearer: Interceptor = (next) => async (req) => {
  const token = storedToken();
  if (token) req.header.set("Authorization", "Bearer " + token);
  return next(req);
};

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [bearer],
});

export const reservations: Client<typeof ReservationService> = createClient(ReservationService, transport);
export const resources: Client<typeof ResourceService> = createClient(ResourceService, transport);

/** A field violation from a google.rpc.BadRequest error detail. */
export interface FieldViolation {
  field: string;
  description: string;
}

// google.rpc.BadRequest { repeated FieldViolation field_violations = 1; }
// FieldViolation { string field = 1; string description = 2; }
// Decoded by hand: the page needs two strings, not googleapis' schemas.
function decodeBadRequest(bytes: Uint8Array): FieldViolation[] {
  const out: FieldViolation[] = [];
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    if (no !== 1) { r.skip(wt); continue; }
    const fr = new BinaryReader(r.bytes());
    const v: FieldViolation = { field: "", description: "" };
    while (fr.pos < fr.len) {
      const [fno, fwt] = fr.tag();
      if (fno === 1) v.field = fr.string();
      else if (fno === 2) v.description = fr.string();
      else fr.skip(fwt);
    }
    out.push(v);
  }
  return out;
}

/** The field violations carried by err, if it is a ledgerd InvalidArgument. */
export function fieldViolations(err: unknown): FieldViolation[] {
  if (!(err instanceof ConnectError)) return [];
  const out: FieldViolation[] = [];
  for (const d of err.details) {
    if ("type" in d && d.type === "google.rpc.BadRequest" && d.value instanceof Uint8Array) {
      try { out.push(...decodeBadRequest(d.value)); } catch { /* malformed detail: ignore */ }
    }
  }
  return out;
}

/** The admission rejection carried by err, if any. */
export function rejection(err: unknown): Rejection | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  return err.findDetails(RejectionSchema)[0];
}

/** A one-line message for err. */
export function errorText(err: unknown): string {
  if (err instanceof ConnectError) return err.rawMessage || Code[err.code];
  if (err instanceof Error) return err.message;
  return String(err);
}

export function isUnauthenticated(err: unknown): boolean {
  return err instanceof ConnectError && err.code === Code.Unauthenticated;
}

export { ConnectError, Code };
