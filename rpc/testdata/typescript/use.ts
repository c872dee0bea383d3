// A client written against what `loop protocol ts` prints: it must compile
// with tsc --strict (TestProtocolTypeScriptCompilesStrict, ../../protocolschema_test.go).
import type {
  ClientMethod,
  ClientMethods,
  ErrorCode,
  ErrorCodes,
  RpcError,
  ServerNotification,
  ServerRequests,
  Snapshot,
} from "./loop-protocol";

declare function call<M extends ClientMethod>(method: M, params: ClientMethods[M]["params"]): Promise<ClientMethods[M]["result"]>;

export async function open(sessionId: string): Promise<number> {
  const snap: Snapshot = await call("session/get", { sessionId });
  const queued = await call("session/prompt", { sessionId, requestId: "r1", text: "hello" });
  return snap.state.messageCount + (queued.queued ? 1 : 0);
}

export function onNotification(n: ServerNotification): string {
  switch (n.method) {
    case "session/state":
      return n.params.snapshot?.state.title ?? "";
    case "session/message":
      return n.params.message?.role ?? n.params.event;
    default:
      return n.method;
  }
}

export function answer(req: ServerRequests["session/request_approval"]["params"]): ServerRequests["session/request_approval"]["result"] {
  return { decision: req.options.includes("allowed-once") ? "allowed-once" : "rejected" };
}

export function retry(e: RpcError): boolean {
  const busy: ErrorCodes["busy"] = -32001;
  const code: ErrorCode = e.data.code;
  return e.code === busy && code === "busy";
}
