// Entry point: sign-in, then the timeline, the details panel, the table
// and the booking form, all fed by one Model kept live by Watch.
import "./style.css";
import { storeToken, storedToken, errorText, isUnauthenticated, reservations } from "./api";
import { Model, ms, stateName, type Bar, type Reservation } from "./model";
import { Timeline } from "./timeline";
import { Booking } from "./booking";
import { $, el, fmtTime, partsText } from "./dom";
import type { Materialization } from "./gen/ledgerd/v1/types_pb";

const model = new Model();
let timeline: Timeline | null = null;
let booking: Booking | null = null;

declare global {
  interface Window {
    /** Read-only hooks for the browser tests and the benchmark. */
    ledgerdUI?: {
      perf: () => Timeline["perf"];
      view: () => [number, number];
      setView: (s: number, e: number) => void;
      zoom: (f: number) => void;
      pan: (f: number) => void;
      connected: () => boolean;
      /** The bar of id on the page: [x, y, width, height] in CSS pixels. */
      barRect: (id: string) => number[] | null;
    };
  }
}

function setStatus(text: string): void { $("status").textContent = text; }

async function signIn(token: string): Promise<void> {
  storeToken(token);
  try {
    await model.loadResources();
  } catch (err) {
    storeToken(null);
    throw err;
  }
}

function showApp(): void {
  $("login").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  const canvas = $("canvas") as HTMLCanvasElement;
  const tl = (timeline = new Timeline(canvas, model));
  booking = new Booking(model, tl, (id) => { void showDetails(id); });
  tl.onSelect = (id) => { if (id) void showDetails(id); else clearDetails(); };
  let freeTimer = 0;
  tl.onView = (s, e) => {
    $("range").textContent = `${fmtTime(s)} – ${fmtTime(e)}`;
    void model.ensure(s, e).catch((err) => setStatus("list failed: " + errorText(err)));
    clearTimeout(freeTimer);
    freeTimer = window.setTimeout(() => { void model.loadFree(s, e).catch(() => {}); }, 200);
  };
  let tableTimer = 0;
  tl.onFrame = (visible) => {
    clearTimeout(tableTimer);
    tableTimer = window.setTimeout(() => {
      renderTable([...visible].sort((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1)));
    }, 150);
  };
  bindToolbar(tl);
  window.ledgerdUI = {
    perf: () => tl.perf,
    view: () => [tl.viewStart, tl.viewEnd],
    setView: (s, e) => tl.setView(s, e),
    zoom: (f) => tl.zoom(f),
    pan: (f) => tl.pan(f),
    connected: () => model.connected,
    barRect: (id) => {
      const r = tl.rectOf(id);
      if (!r) return null;
      const c = canvas.getBoundingClientRect();
      return [c.left + r[0], c.top + r[1], r[2], r[3]];
    },
  };
  // Watch first, then List: events that race with List are applied on top
  // of it (newer versions win), so nothing between the two is lost.
  const started = new Promise<void>((resolve) => {
    void model.watch(
      (e) => {
        $("live").textContent = `live · v${e.version}`;
        booking?.onEvent(e);
        if (e.reservation && e.reservation.id === detailsId) void showDetails(e.reservation.id, false);
        if (e.resource) scheduleFree();
      },
      (ok, err) => {
        $("live").textContent = ok ? "live" : "reconnecting…";
        if (!ok && isUnauthenticated(err)) signOut("session expired: sign in again");
      },
      resolve,
    );
  });
  const scheduleFree = () => {
    clearTimeout(freeTimer);
    freeTimer = window.setTimeout(() => { void model.loadFree(tl.viewStart, tl.viewEnd).catch(() => {}); }, 300);
  };
  model.onChange(() => { /* redraw is requested by the timeline itself */ });
  void started.then(async () => {
    const span = tl.viewEnd - tl.viewStart;
    await model.load(tl.viewStart - span, tl.viewEnd + span);
    await model.loadFree(tl.viewStart, tl.viewEnd).catch(() => {});
    tl.ready = true;
    tl.request();
    setStatus(storedToken() ? "signed in" : "signed in (no authentication)");
    $("range").textContent = `${fmtTime(tl.viewStart)} – ${fmtTime(tl.viewEnd)}`;
  }).catch((err) => setStatus("could not load reservations: " + errorText(err)));
  // Hold countdowns and the now-line move with the clock.
  setInterval(() => tl.request(), 30_000);
  // Free capacity changes whenever a reservation does.
  let lastCount = -1;
  setInterval(() => {
    const n = Number(model.version);
    if (n !== lastCount) { lastCount = n; scheduleFree(); }
  }, 2000);
}

function bindToolbar(tl: Timeline): void {
  for (const b of document.querySelectorAll<HTMLButtonElement>("[data-zoom]")) {
    b.addEventListener("click", () => tl.zoomTo(Number(b.dataset.zoom)));
  }
  $("zoom-in").addEventListener("click", () => tl.zoom(0.5));
  $("zoom-out").addEventListener("click", () => tl.zoom(2));
  $("pan-left").addEventListener("click", () => tl.pan(-0.25));
  $("pan-right").addEventListener("click", () => tl.pan(0.25));
  $("now").addEventListener("click", () => tl.zoomTo(tl.viewEnd - tl.viewStart));
  const jump = $("jump") as HTMLInputElement;
  jump.addEventListener("change", () => {
    if (!jump.value) return;
    const t = new Date(jump.value + "T00:00").getTime();
    if (!Number.isNaN(t)) tl.jump(t);
  });
}

function renderTable(visible: Bar[]): void {
  const body = $("list").querySelector("tbody")!;
  const shown = visible.slice(0, 200);
  $("list-count").textContent = visible.length > shown.length ? `(${shown.length} of ${visible.length})` : `(${visible.length})`;
  const rows = shown.map((b) => {
    const r = b.r;
    const open = el("button", { type: "button" }, r.id);
    open.setAttribute("aria-label", "Details of " + r.id);
    open.addEventListener("click", () => { timeline?.select(r.id); void showDetails(r.id); });
    const tr = el("tr", {},
      el("td", {}, open), el("td", {}, r.tenant),
      el("td", { class: "state " + stateName(r.state) }, stateName(r.state) + (r.pending ? " (modifying)" : "")),
      el("td", {}, partsText(r.parts)), el("td", {}, fmtTime(b.start)), el("td", {}, fmtTime(b.end)),
      el("td", {}, labelsText(r.labels)));
    tr.dataset.id = r.id;
    return tr;
  });
  body.replaceChildren(...rows);
}

function labelsText(labels: { [k: string]: string }): string {
  return Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(", ");
}

let detailsId: string | null = null;

function clearDetails(): void {
  detailsId = null;
  $("details-empty").hidden = false;
  $("details-fields").replaceChildren();
  $("details-actions").replaceChildren();
  $("details-history").replaceChildren();
  $("details-error").textContent = "";
}

// materializationText says whether the site's resource manager holds the
// reservation, as the bridge last recorded it.
function materializationText(m: Materialization): string {
  const state = ["unrecorded", "pending", "materialized", "failed", "removed"][m.state] ?? String(m.state);
  let s = state + (m.name ? ` ${m.name}` : "");
  if (m.units.length > 0) s += ` on ${m.units.join(", ")}`;
  if (m.start && m.end) s += ` ${fmtTime(ms(m.start))} – ${fmtTime(ms(m.end))}`;
  if (m.message) s += `: ${m.message}`;
  return s;
}

async function showDetails(id: string, withHistory = true): Promise<void> {
  detailsId = id;
  $("details-error").textContent = "";
  let r: Reservation | undefined = model.bars.get(id)?.r;
  try {
    r = (await reservations.get({ id })).reservation ?? r;
  } catch (err) {
    if (!r) { $("details-error").textContent = errorText(err); return; }
  }
  if (!r || detailsId !== id) return;
  $("details-empty").hidden = true;
  const f: [string, string][] = [
    ["Id", r.id], ["Tenant", r.tenant], ["State", stateName(r.state)],
    ["Kind", r.kind === 2 ? "variable job" : "reservation"],
    ["Resources", partsText(r.parts)], ["Start", fmtTime(ms(r.start))], ["End", fmtTime(ms(r.end))],
  ];
  if (r.units.length > 0) f.push(["Units", r.units.join(", ")]);
  if (r.pending && r.pending.units.length > 0) f.push(["Pending units", r.pending.units.join(", ")]);
  if (r.materialization) f.push(["Slurm", materializationText(r.materialization)]);
  if (r.holdExpiresAt) f.push(["Hold expires", fmtTime(ms(r.holdExpiresAt))]);
  if (r.shortUnits > 0n) f.push(["Missing units", String(r.shortUnits)]);
  if (r.pending) f.push(["Pending change", `${partsText(r.pending.parts)} ${fmtTime(ms(r.pending.start))} – ${fmtTime(ms(r.pending.end))}, held until ${fmtTime(ms(r.pending.holdExpiresAt))}`]);
  if (r.relaxed) f.push(["Relaxed", `admitted with overlap, p(no violation) ${r.probabilityPermille / 10}%`]);
  if (r.pushes) f.push(["Pushed later", String(r.pushes) + " times"]);
  if (r.actualEnd) f.push(["Actual end", fmtTime(ms(r.actualEnd))]);
  for (const k of Object.keys(r.labels).sort()) f.push(["Label " + k, r.labels[k]]);
  f.push(["Version", `${r.version} (created ${r.createdVersion})`]);
  $("details-fields").replaceChildren(...f.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  $("details-actions").replaceChildren(...(booking ? booking.actionsFor(r) : []));
  if (withHistory) void loadHistory(r);
}

async function loadHistory(r: Reservation): Promise<void> {
  const list = $("details-history");
  list.replaceChildren(el("li", {}, "loading…"));
  const items: HTMLElement[] = [];
  let from = r.createdVersion, index = 0;
  try {
    for (let page = 0; page < 5 && items.length < 100; page++) {
      const res = await reservations.history({ fromVersion: from, fromIndex: index, limit: 1000 });
      for (const e of res.events) {
        if (e.reservation?.id !== r.id) continue;
        items.push(el("li", {}, `v${e.version} ${fmtTime(ms(e.time))} ${e.action || "change"} → ${stateName(e.reservation.state)}`));
      }
      if (res.events.length < 1000) break;
      from = res.nextVersion; index = res.nextIndex;
    }
  } catch (err) {
    items.push(el("li", {}, "history unavailable: " + errorText(err)));
  }
  if (detailsId === r.id) list.replaceChildren(...(items.length ? items : [el("li", {}, "no events")]));
}

function signOut(message = "signed out"): void {
  storeToken(null);
  model.close();
  location.reload();
  setStatus(message);
}

function init(): void {
  $("logout").addEventListener("click", () => signOut());
  const form = $("login-form") as HTMLFormElement;
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const token = ($("token") as HTMLInputElement).value.trim();
    $("login-error").textContent = "";
    signIn(token).then(showApp, (err) => {
      $("login-error").textContent = isUnauthenticated(err) ? "This token is not valid." : errorText(err);
      ($("token") as HTMLInputElement).setAttribute("aria-invalid", "true");
    });
  });
  const token = storedToken();
  if (token !== null) {
    signIn(token).then(showApp, (err) => {
      $("login").hidden = false;
      $("login-error").textContent = errorText(err);
    });
  } else {
    $("login").hidden = false;
    ($("token") as HTMLInputElement).focus();
  }
}


init();
