// The booking form: find the earliest fit and the first offers (drawn as
// ghost bars), hold, watch the hold count down, commit or abort; modify an
// existing reservation the same two-phase way; cancel. Server-side field
// errors (google.rpc.BadRequest) are shown beside the field they name.
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { reservations, errorText, fieldViolations, rejection } from "./api";
import { ms, timestampFromMs, ReservationState, type Model, type Reservation, type Event } from "./model";
import { ShapeSchema, type Shape } from "./gen/ledgerd/v1/types_pb";
import type { Timeline, Ghost } from "./timeline";
import { $, el, fmtTime, partsText, toLocalInput, fromLocalInput } from "./dom";

interface PartRow {
  resource: HTMLSelectElement;
  amount: HTMLInputElement;
  error: HTMLElement;
}

export class Booking {
  private parts: PartRow[] = [];
  private modifying: Reservation | null = null;
  /** The reservation whose hold (or pending change) is shown counting down. */
  private held: { id: string; expires: number; pending: boolean } | null = null;
  private tick = 0;

  constructor(private model: Model, private timeline: Timeline, private show: (id: string) => void) {
    $("add-part").addEventListener("click", () => { this.addPart(); this.parts[this.parts.length - 1].resource.focus(); });
    $("find").addEventListener("click", () => void this.find());
    $("reset-form").addEventListener("click", () => this.reset());
    ($("book") as HTMLFormElement).addEventListener("submit", (e) => { e.preventDefault(); void this.hold(); });
    $("commit").addEventListener("click", () => void this.finish(true));
    $("abort").addEventListener("click", () => void this.finish(false));
    for (const r of document.querySelectorAll<HTMLInputElement>('input[name="when"]')) {
      r.addEventListener("change", () => this.syncWhen());
    }
    model.onChange(() => this.syncResources());
    this.reset();
  }

  private whenMode(): "window" | "exact" {
    return (document.querySelector<HTMLInputElement>('input[name="when"]:checked')?.value as "window" | "exact") ?? "window";
  }

  private syncWhen(): void {
    const mode = this.whenMode();
    for (const row of document.querySelectorAll<HTMLElement>("[data-when]")) row.hidden = row.dataset.when !== mode;
  }

  private syncResources(): void {
    const names = [...this.model.resources.keys()].sort();
    for (const p of this.parts) {
      const cur = p.resource.value;
      if (p.resource.options.length === names.length && [...p.resource.options].every((o, i) => o.value === names[i])) continue;
      p.resource.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
      if (names.includes(cur)) p.resource.value = cur;
    }
  }

  private addPart(resource?: string, amount?: bigint): void {
    const i = this.parts.length;
    const sel = el("select", { id: `part-resource-${i}`, "aria-describedby": `err-part-${i}` });
    const lab = el("label", { for: `part-resource-${i}` }, "Resource");
    const amt = el("input", { id: `part-amount-${i}`, type: "number", min: "1", value: String(amount ?? 1n), "aria-describedby": `err-part-${i}` });
    const alab = el("label", { for: `part-amount-${i}` }, "Amount");
    const rm = el("button", { type: "button", "aria-label": `Remove resource ${i + 1}` }, "×");
    const err = el("p", { class: "error", id: `err-part-${i}`, role: "alert" });
    const row: PartRow = { resource: sel, amount: amt, error: err };
    this.parts.push(row);
    const div = el("div", { class: "part" }, lab, sel, alab, amt, rm, err);
    rm.addEventListener("click", () => {
      if (this.parts.length === 1) return;
      this.parts.splice(this.parts.indexOf(row), 1);
      div.remove();
    });
    $("parts").append(div);
    this.syncResources();
    if (resource) sel.value = resource;
  }

  reset(): void {
    this.modifying = null;
    this.parts = [];
    $("parts").replaceChildren();
    this.addPart();
    ($("duration") as HTMLInputElement).value = "60";
    ($("ttl") as HTMLInputElement).value = "300";
    ($("labels") as HTMLTextAreaElement).value = "";
    ($("not-before") as HTMLInputElement).value = toLocalInput(Date.now() + 5 * 60_000);
    ($("deadline") as HTMLInputElement).value = "";
    ($("exact-start") as HTMLInputElement).value = "";
    $("book-mode").textContent = "";
    $("hold").textContent = "Hold";
    $("fit").textContent = "";
    this.clearErrors();
    this.timeline.setGhosts([]);
  }

  /** Prefills the form with r's shape to hold a modification of it. */
  startModify(r: Reservation): void {
    this.reset();
    this.modifying = r;
    this.parts = [];
    $("parts").replaceChildren();
    for (const p of r.parts) this.addPart(p.resource, p.amount);
    ($("duration") as HTMLInputElement).value = String(Math.round((ms(r.end) - ms(r.start)) / 60_000));
    (document.querySelector('input[name="when"][value="exact"]') as HTMLInputElement).checked = true;
    this.syncWhen();
    ($("exact-start") as HTMLInputElement).value = toLocalInput(Math.max(ms(r.start), Date.now() + 60_000));
    $("book-mode").textContent = `Modifying ${r.id}: the original stays booked until you commit the change.`;
    $("hold").textContent = "Hold change";
    this.parts[0].amount.focus();
  }

  private clearErrors(): void {
    for (const e of document.querySelectorAll<HTMLElement>("#book .error")) e.textContent = "";
    for (const e of document.querySelectorAll<HTMLElement>("#book [aria-invalid]")) e.removeAttribute("aria-invalid");
  }

  private shape(): Shape {
    const s = create(ShapeSchema, {
      parts: this.parts.map((p) => ({ resource: p.resource.value, amount: BigInt(Math.trunc(Number(p.amount.value) || 0)) })),
      duration: durationFromMs(Math.round((Number(($("duration") as HTMLInputElement).value) || 0) * 60_000)),
    });
    if (this.whenMode() === "exact") {
      const t = fromLocalInput(($("exact-start") as HTMLInputElement).value);
      if (!Number.isNaN(t)) s.exactStart = timestampFromMs(t);
    } else {
      const nb = fromLocalInput(($("not-before") as HTMLInputElement).value);
      const dl = fromLocalInput(($("deadline") as HTMLInputElement).value);
      if (!Number.isNaN(nb)) s.notBefore = timestampFromMs(nb);
      if (!Number.isNaN(dl)) s.deadline = timestampFromMs(dl);
    }
    return s;
  }

  private labels(): { [k: string]: string } {
    const out: { [k: string]: string } = {};
    for (const line of ($("labels") as HTMLTextAreaElement).value.split("\n")) {
      const t = line.trim();
      if (!t) continue;
      const i = t.indexOf("=");
      if (i < 0) out[t] = "";
      else out[t.slice(0, i).trim()] = t.slice(i + 1).trim();
    }
    return out;
  }

  /** Shows err beside the field it names, or under the form. */
  private showError(err: unknown): void {
    const v = fieldViolations(err);
    let placed = false;
    for (const f of v) {
      const target = this.fieldTarget(f.field);
      if (!target) continue;
      target.error.textContent = `${f.description} (${f.field})`;
      target.input?.setAttribute("aria-invalid", "true");
      target.input?.focus();
      placed = true;
    }
    if (!placed) {
      const rej = rejection(err);
      let msg = errorText(err);
      if (rej?.earliestStart && !msg.includes("earliest")) msg += ` — the earliest start that would fit is ${fmtTime(ms(rej.earliestStart))}`;
      $("err-form").textContent = msg;
    }
  }

  private fieldTarget(field: string): { error: HTMLElement; input?: HTMLElement } | null {
    const f = field.replace(/^shape\./, "");
    const m = /^parts\[(\d+)\](?:\.(resource|amount))?/.exec(f);
    if (m) {
      const p = this.parts[Number(m[1])];
      if (!p) return { error: $("err-parts") };
      return { error: p.error, input: m[2] === "amount" ? p.amount : p.resource };
    }
    const simple: { [k: string]: [string, string] } = {
      parts: ["err-parts", "add-part"], duration: ["err-duration", "duration"],
      not_before: ["err-not-before", "not-before"], deadline: ["err-deadline", "deadline"],
      exact_start: ["err-exact-start", "exact-start"], hold_ttl: ["err-ttl", "ttl"],
    };
    const key = f.split(/[.[]/)[0];
    if (simple[key]) return { error: $(simple[key][0]), input: $(simple[key][1]) };
    if (key === "labels") return { error: $("err-labels"), input: $("labels") };
    return null;
  }

  private async find(): Promise<void> {
    this.clearErrors();
    $("fit").textContent = "";
    const shape = this.shape();
    const res = shape.parts.map((p) => p.resource);
    try {
      const [fit, offers] = await Promise.all([reservations.find({ shape }), reservations.offers({ shape, maxOffers: 5 })]);
      const ghosts: Ghost[] = offers.offers.map((o, i) => ({ start: ms(o.start), end: ms(o.end), resources: res, label: `offer ${i + 1}` }));
      if (fit.fits && fit.start) {
        const s = ms(fit.start);
        const dur = ms(fit.start) + Number(shape.duration!.seconds) * 1000 - s;
        if (!ghosts.some((g) => g.start === s)) ghosts.unshift({ start: s, end: s + dur, resources: res, label: "earliest fit" });
        else ghosts.find((g) => g.start === s)!.label = "earliest fit";
        $("fit").textContent = `Earliest fit: ${fmtTime(s)}. ${ghosts.length} offer(s) drawn on the timeline.`;
        const span = this.timeline.viewEnd - this.timeline.viewStart;
        if (s < this.timeline.viewStart || s > this.timeline.viewEnd) this.timeline.jump(s - span / 4);
      } else {
        $("fit").textContent = fit.laterStart ? `No fit in the window; the earliest start outside it is ${fmtTime(ms(fit.laterStart))}.` : "No fit.";
      }
      this.timeline.setGhosts(ghosts);
    } catch (err) {
      this.showError(err);
    }
  }

  private async hold(): Promise<void> {
    this.clearErrors();
    const shape = this.shape();
    const ttlS = Number(($("ttl") as HTMLInputElement).value);
    const holdTtl = durationFromMs(Math.round((Number.isFinite(ttlS) ? ttlS : 0) * 1000));
    try {
      let r: Reservation | undefined;
      if (this.modifying) {
        r = (await reservations.modify({ id: this.modifying.id, shape, holdTtl })).reservation;
      } else {
        r = (await reservations.hold({ shape, holdTtl, labels: this.labels() })).reservation;
      }
      if (!r) return;
      this.timeline.setGhosts([]);
      $("fit").textContent = "";
      const pending = !!this.modifying;
      this.held = { id: r.id, expires: ms(pending ? r.pending?.holdExpiresAt : r.holdExpiresAt), pending };
      $("held-what").textContent = pending ? `Change of ${r.id} held:` : `${r.id} held (${partsText(r.parts)}, ${fmtTime(ms(r.start))}):`;
      $("held").hidden = false;
      this.timeline.select(r.id);
      this.show(r.id);
      this.countdown();
      ($("commit") as HTMLButtonElement).focus();
    } catch (err) {
      this.showError(err);
    }
  }

  private countdown(): void {
    clearInterval(this.tick);
    const upd = () => {
      if (!this.held) return;
      const left = Math.max(0, Math.round((this.held.expires - Date.now()) / 1000));
      $("countdown").textContent = left > 0 ? `expires in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}` : "expired";
    };
    upd();
    this.tick = window.setInterval(upd, 1000);
  }

  private async finish(commit: boolean): Promise<void> {
    if (!this.held) return;
    const id = this.held.id;
    try {
      if (commit) await reservations.commit({ id });
      else await reservations.abort({ id });
      this.reset();
      this.closeHeld(`${id} ${commit ? "committed" : "aborted"}.`);
      this.show(id);
    } catch (err) {
      $("countdown").textContent = errorText(err);
    }
  }

  private closeHeld(message: string): void {
    clearInterval(this.tick);
    this.held = null;
    $("held").hidden = true;
    $("fit").textContent = message;
  }

  /** Follows the held reservation's fate when someone else ends it. */
  onEvent(e: Event): void {
    const r = e.reservation;
    if (!r || !this.held || r.id !== this.held.id) return;
    if (this.held.pending ? !r.pending : r.state !== ReservationState.HELD) {
      this.closeHeld(`${r.id} is now ${ReservationState[r.state].toLowerCase()}.`);
    }
  }

  /** Buttons for the details panel of r. */
  actionsFor(r: Reservation): HTMLElement[] {
    const out: HTMLElement[] = [];
    const act = (label: string, f: () => Promise<unknown>) => {
      const b = el("button", { type: "button" }, label);
      b.addEventListener("click", () => {
        $("details-error").textContent = "";
        f().then(() => this.show(r.id), (err) => { $("details-error").textContent = errorText(err); });
      });
      out.push(b);
    };
    if (r.state === ReservationState.HELD || r.pending) {
      act(r.pending ? "Commit change" : "Commit", () => reservations.commit({ id: r.id }));
      act(r.pending ? "Abort change" : "Abort", () => reservations.abort({ id: r.id }));
    }
    if (r.state === ReservationState.COMMITTED && !r.pending) {
      const m = el("button", { type: "button" }, "Modify");
      m.addEventListener("click", () => this.startModify(r));
      out.push(m);
      act("Cancel reservation", () => reservations.cancel({ id: r.id }));
    }
    return out;
  }
}
