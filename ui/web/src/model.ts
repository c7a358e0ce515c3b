// The page's copy of the ledger: reservations and resources kept current
// from List, then from the Watch stream (resuming after (version, index)).
import { timestampMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { reservations, resources } from "./api";
import { EventType, ReservationState, ReservationKind, type Reservation, type Resource, type FreeBlock, type Event } from "./gen/ledgerd/v1/types_pb";

export { ReservationState, ReservationKind };
export type { Reservation, Resource, FreeBlock, Event };

export function ms(t: Timestamp | undefined): number {
  return t ? timestampMs(t) : 0;
}
export { timestampFromMs };

/** States the timeline draws; the others are history. */
export const liveStates = [
  ReservationState.HELD, ReservationState.COMMITTED, ReservationState.ACTIVE,
  ReservationState.DEGRADED, ReservationState.COMPLETED,
  // Waiting for an operator: it holds its capacity like a hold.
  ReservationState.PENDING_APPROVAL,
];
const live = new Set(liveStates);

export function stateName(s: ReservationState): string {
  return (ReservationState[s] ?? String(s)).toLowerCase();
}

/** A reservation reduced to what drawing needs, with times in ms. */
export interface Bar {
  r: Reservation;
  id: string;
  start: number;
  end: number;
  state: ReservationState;
  job: boolean;
  pendingStart: number;
  pendingEnd: number;
  /** When a HELD reservation (or its pending change) lapses; 0 if none. */
  holdExpires: number;
}

function toBar(r: Reservation): Bar {
  return {
    r, id: r.id, start: ms(r.start), end: ms(r.end), state: r.state,
    job: r.kind === ReservationKind.VARIABLE_JOB,
    pendingStart: ms(r.pending?.start), pendingEnd: ms(r.pending?.end),
    holdExpires: ms(r.pending?.holdExpiresAt ?? r.holdExpiresAt),
  };
}

/** What changed: the reservations (or resources), or only free capacity. */
export type Change = "bars" | "free";

export interface Listener { (what: Change): void }

export class Model {
  bars = new Map<string, Bar>();
  resources = new Map<string, Resource>();
  free = new Map<string, FreeBlock[]>();
  /** Loaded time window: List covered [from, to). */
  from = 0;
  to = 0;
  /** Watch position: the last event seen. */
  version = 0n;
  index = 0;
  connected = false;
  private listeners: Listener[] = [];
  private stop = new AbortController();
  private loading: Promise<void> | null = null;

  onChange(l: Listener): void { this.listeners.push(l); }
  private changed(what: Change = "bars"): void { for (const l of this.listeners) l(what); }

  close(): void { this.stop.abort(); }

  async loadResources(): Promise<void> {
    const res = await resources.list({}, { signal: this.stop.signal });
    this.resources.clear();
    for (const r of res.resources) this.resources.set(r.name, r);
  }

  /** Loads every live reservation overlapping [from, to), page by page. */
  async load(from: number, to: number): Promise<void> {
    const bars = new Map<string, Bar>();
    let pageToken = "";
    do {
      const res = await reservations.list({
        from: timestampFromMs(from), to: timestampFromMs(to), states: liveStates,
        pageSize: 1000, pageToken,
      }, { signal: this.stop.signal });
      for (const r of res.reservations) bars.set(r.id, toBar(r));
      pageToken = res.nextPageToken;
    } while (pageToken);
    // Keep anything the stream delivered meanwhile if it is newer.
    for (const [id, b] of this.bars) {
      const nb = bars.get(id);
      if (nb ? b.r.version > nb.r.version : b.start < to && b.end > from) bars.set(id, b);
    }
    this.bars = bars;
    this.from = from;
    this.to = to;
    this.changed();
  }

  /** Makes sure [from, to) is loaded, loading a wider window when not. */
  ensure(from: number, to: number): Promise<void> {
    if (from >= this.from && to <= this.to) return Promise.resolve();
    if (this.loading) return this.loading;
    const span = to - from;
    this.loading = this.load(from - span, to + span).finally(() => { this.loading = null; });
    return this.loading;
  }

  async loadFree(from: number, to: number): Promise<void> {
    const out = new Map<string, FreeBlock[]>();
    await Promise.all([...this.resources.keys()].map(async (name) => {
      try {
        const res = await reservations.availability({ resource: name, from: timestampFromMs(from), to: timestampFromMs(to) },
          { signal: this.stop.signal });
        out.set(name, res.blocks);
      } catch { /* a resource deleted meanwhile: no strip */ }
    }));
    this.free = out;
    this.changed("free");
  }

  /** Applies one ledger event; stale copies never overwrite newer ones. */
  apply(e: Event): void {
    const r = e.reservation;
    if (r) {
      const old = this.bars.get(r.id);
      if (!old || r.version >= old.r.version) {
        if (live.has(r.state)) this.bars.set(r.id, toBar(r));
        else this.bars.delete(r.id);
      }
    }
    if (e.resource) {
      if (e.type === EventType.RESOURCE_DELETED) this.resources.delete(e.resource.name);
      else this.resources.set(e.resource.name, e.resource);
    }
    this.changed();
  }

  /**
   * Watches the ledger until close(), reconnecting with a capped backoff and
   * resuming after the last event seen, so nothing is missed or repeated.
   * started resolves once the stream has told where it starts.
   */
  async watch(onEvent: (e: Event) => void, onState: (connected: boolean, err?: unknown) => void, started?: () => void): Promise<void> {
    let backoff = 250;
    let first = true;
    while (!this.stop.signal.aborted) {
      try {
        const from = this.version === 0n ? 0n : this.version;
        const fromIndex = this.version === 0n ? 0 : this.index + 1;
        for await (const m of reservations.watch({ fromVersion: from, fromIndex }, { signal: this.stop.signal })) {
          if (!this.connected) { this.connected = true; onState(true); backoff = 250; }
          if (m.event) {
            this.version = m.event.version;
            this.index = m.event.index;
            this.apply(m.event);
            onEvent(m.event);
          } else if (m.progressVersion > 0n && this.version === 0n) {
            // Everything below progressVersion is already in List's answer.
            this.version = m.progressVersion;
            this.index = -1;
          }
          if (first) { first = false; started?.(); }
        }
      } catch (err) {
        if (this.stop.signal.aborted) return;
        this.connected = false;
        onState(false, err);
      }
      if (first) { first = false; started?.(); }
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 10_000);
    }
  }
}
