// The timeline: resources as rows, time as the axis, drawn on one canvas.
//
// Why a canvas and d3-scale rather than a DOM timeline widget: vis-timeline
// and frappe-gantt create one DOM element (or SVG node) per bar, and with
// ten thousand bars in view every zoom step re-lays out ten thousand
// elements, far beyond a 100 ms redraw. d3-scale/d3-time (small, maintained,
// no DOM) give the time axis, tick choice and formats; bars, lanes and the
// free-capacity strip are plain rectangles on a canvas, and every
// user-supplied string on it is drawn with fillText (text, never HTML). The
// table below the canvas lists the same reservations for keyboard and
// screen-reader users.
import { scaleTime } from "d3-scale";
import { ReservationState, stateName, ms, type Bar, type Model } from "./model";

const hour = 3_600_000;
const day = 24 * hour;
/** Above this span the timeline aggregates bars into a usage profile. */
export const aggregateAbove = day;
const minSpan = 15 * 60_000;
const maxSpan = 400 * day;

const labelW = 150;
const axisH = 34;
const stripH = 7;
const laneH = 16;
const maxLanes = 8;
const aggH = 56;
const rowPad = 6;

/** A possible booking drawn before anything is booked. */
export interface Ghost {
  start: number;
  end: number;
  resources: string[];
  label: string;
}

interface Row {
  name: string;
  y: number;
  h: number;
  lanes: number;
}

interface Colors {
  [k: string]: string;
}

function readColors(): Colors {
  const cs = getComputedStyle(document.documentElement);
  const out: Colors = {};
  for (const k of ["bg", "fg", "muted", "grid", "row-alt", "border", "held", "committed", "active", "degraded",
    "job", "pending", "ghost", "free", "full", "now", "bar-text", "accent"]) {
    out[k] = cs.getPropertyValue("--" + k).trim() || "#888";
  }
  return out;
}

export interface Perf {
  /** ms from navigation start to the first frame drawn with data. */
  first: number | null;
  /** ms from each pan/zoom input to the end of the frame that shows it. */
  redraws: number[];
  /** Bars drawn individually in the last frame (0 when aggregated). */
  lastBars: number;
  /** Reservations in the visible range in the last frame. */
  lastVisible: number;
  /** Ids of the reservations in the visible range in the last frame. */
  readonly visibleIds: string[];
}

export class Timeline {
  viewStart: number;
  viewEnd: number;
  ghosts: Ghost[] = [];
  selected: string | null = null;
  /** Called when a bar is clicked (id) or the selection is cleared (null). */
  onSelect: (id: string | null) => void = () => {};
  /** Called after the view window changed (debounced by the caller). */
  onView: (start: number, end: number) => void = () => {};
  /** Called after each frame with the visible bars, sorted by start. */
  onFrame: (visible: Bar[]) => void = () => {};
  private visible: Bar[] = [];
  perf: Perf = (() => {
    const self = this;
    return {
      first: null, redraws: [], lastBars: 0, lastVisible: 0,
      // Computed on demand: building it every frame costs a redraw budget.
      get visibleIds() { return self.visible.map((b) => b.id); },
    };
  })();
  ready = false;

  private ctx: CanvasRenderingContext2D;
  private colors: Colors = readColors();
  private width = 800;
  private rows: Row[] = [];
  private byResource = new Map<string, Bar[]>();
  /** lanes.get(resource)[i] is the lane of byResource.get(resource)[i]. */
  private lanes = new Map<string, Uint16Array>();
  private dirty = true;
  private frame = 0;
  private inputT: number | null = null;
  private hitX: number[] = [];
  private hitY: number[] = [];
  private hitW: number[] = [];
  private hitH: number[] = [];
  private hitId: string[] = [];
  private drag: { x: number; start: number; end: number; moved: boolean } | null = null;
  /** Per-row captions ("peak", "+N in the last lane"), drawn after clipping. */
  private peaks: [number, string][] = [];
  private scratchCols = 0;
  private diff: Float64Array[] = [];
  private heights: Float64Array[] = [];
  private base = new Float64Array(0);

  constructor(private canvas: HTMLCanvasElement, private model: Model) {
    const ctx = canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("canvas 2d context unavailable");
    this.ctx = ctx;
    const now = Date.now();
    this.viewStart = now - 2 * hour;
    this.viewEnd = now + 22 * hour;
    // Only reservation changes need the lanes laid out again (a sort of
    // every bar); free capacity only needs a redraw.
    model.onChange((what) => { if (what === "bars") this.dirty = true; this.request(); });
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => { this.colors = readColors(); this.request(); });
    new ResizeObserver(() => this.request()).observe(canvas.parentElement!);
    this.bindInput();
  }

  /** Sets the visible window; t is when the user asked for it. */
  setView(start: number, end: number, t: number = performance.now()): void {
    let span = Math.min(Math.max(end - start, minSpan), maxSpan);
    const mid = (start + end) / 2;
    if (end - start !== span) { start = mid - span / 2; end = mid + span / 2; }
    this.viewStart = Math.round(start);
    this.viewEnd = Math.round(start + span);
    if (this.inputT === null) this.inputT = t;
    this.request();
    this.onView(this.viewStart, this.viewEnd);
  }

  zoom(factor: number, at?: number): void {
    const c = at ?? (this.viewStart + this.viewEnd) / 2;
    const f = (c - this.viewStart) / (this.viewEnd - this.viewStart);
    const span = (this.viewEnd - this.viewStart) * factor;
    this.setView(c - f * span, c - f * span + span);
  }

  zoomTo(span: number): void {
    const now = Date.now();
    const mid = now >= this.viewStart && now <= this.viewEnd ? now : (this.viewStart + this.viewEnd) / 2;
    this.setView(mid - span / 4, mid + (3 * span) / 4);
  }

  pan(fraction: number): void {
    const d = (this.viewEnd - this.viewStart) * fraction;
    this.setView(this.viewStart + d, this.viewEnd + d);
  }

  jump(t: number): void {
    const span = this.viewEnd - this.viewStart;
    this.setView(t, t + span);
  }

  setGhosts(g: Ghost[]): void { this.ghosts = g; this.request(); }
  select(id: string | null): void { this.selected = id; this.request(); }
  request(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.draw(); });
  }

  private bindInput(): void {
    const c = this.canvas;
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const at = this.timeAt(e.offsetX);
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        this.pan((e.deltaX || e.deltaY) / Math.max(this.width - labelW, 1));
      } else {
        this.zoom(Math.exp(e.deltaY * 0.0015), at);
      }
    }, { passive: false });
    c.addEventListener("pointerdown", (e) => {
      this.drag = { x: e.clientX, start: this.viewStart, end: this.viewEnd, moved: false };
      c.setPointerCapture(e.pointerId);
    });
    c.addEventListener("pointermove", (e) => {
      if (!this.drag) return;
      const dx = e.clientX - this.drag.x;
      if (Math.abs(dx) > 3) this.drag.moved = true;
      if (!this.drag.moved) return;
      const perPx = (this.drag.end - this.drag.start) / Math.max(this.width - labelW, 1);
      this.setView(this.drag.start - dx * perPx, this.drag.end - dx * perPx);
    });
    c.addEventListener("pointerup", (e) => {
      const d = this.drag;
      this.drag = null;
      if (d && !d.moved) this.click(e.offsetX, e.offsetY);
    });
    c.addEventListener("keydown", (e) => {
      const k = e.key;
      if (k === "ArrowLeft") this.pan(-0.1);
      else if (k === "ArrowRight") this.pan(0.1);
      else if (k === "+" || k === "=") this.zoom(0.5);
      else if (k === "-" || k === "_") this.zoom(2);
      else if (k === "Home") this.zoomTo(this.viewEnd - this.viewStart);
      else if (k === "Escape") { this.select(null); this.onSelect(null); }
      else return;
      e.preventDefault();
    });
  }

  /** Where the bar of id was drawn in the last frame (canvas CSS pixels). */
  rectOf(id: string): [number, number, number, number] | null {
    const i = this.hitId.indexOf(id);
    return i < 0 ? null : [this.hitX[i], this.hitY[i], this.hitW[i], this.hitH[i]];
  }

  private timeAt(x: number): number {
    return this.viewStart + ((x - labelW) / Math.max(this.width - labelW, 1)) * (this.viewEnd - this.viewStart);
  }

  private click(x: number, y: number): void {
    for (let i = this.hitId.length - 1; i >= 0; i--) {
      if (x >= this.hitX[i] && x <= this.hitX[i] + this.hitW[i] && y >= this.hitY[i] && y <= this.hitY[i] + this.hitH[i]) {
        this.select(this.hitId[i]);
        this.onSelect(this.hitId[i]);
        return;
      }
    }
    if (this.viewEnd - this.viewStart > aggregateAbove && x > labelW && y > axisH) {
      const t = this.timeAt(x);
      this.setView(t - day / 2, t + day / 2);
    }
  }

  /** Groups bars by resource and packs them into lanes (on data change only). */
  private layout(): void {
    const byRes = new Map<string, Bar[]>();
    for (const name of this.model.resources.keys()) byRes.set(name, []);
    for (const b of this.model.bars.values()) {
      for (const p of b.r.parts) {
        let l = byRes.get(p.resource);
        if (!l) byRes.set(p.resource, (l = []));
        l.push(b);
      }
    }
    this.lanes.clear();
    for (const [name, list] of byRes) {
      list.sort((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1));
      const ends: number[] = [];
      const lane = new Uint16Array(list.length);
      for (let j = 0; j < list.length; j++) {
        const b = list[j];
        const end = Math.max(b.end, b.pendingEnd);
        // Lanes 0..maxLanes-2 hold bars that do not overlap; the last lane
        // takes every bar that found no room (counted as "+N more").
        let i = 0;
        while (i < maxLanes - 1 && i < ends.length && ends[i] > b.start) i++;
        if (i < maxLanes - 1) ends[i] = end;
        lane[j] = i;
      }
      this.lanes.set(name, lane);
    }
    this.byResource = new Map([...byRes].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
  }

  draw(): void {
    if (this.dirty) { this.layout(); this.dirty = false; }
    const aggregated = this.viewEnd - this.viewStart > aggregateAbove;
    const rect = this.canvas.parentElement!.getBoundingClientRect();
    this.width = Math.max(Math.floor(rect.width), 300);
    this.rows = [];
    let y = axisH;
    for (const [name, list] of this.byResource) {
      let lanes = 1;
      if (!aggregated) {
        const lane = this.lanes.get(name)!;
        for (let j = 0; j < list.length; j++) {
          const b = list[j];
          if (b.start >= this.viewEnd) break;
          if (b.end > this.viewStart && lane[j] >= lanes) lanes = lane[j] + 1;
        }
      }
      const h = stripH + rowPad * 2 + (aggregated ? aggH : lanes * laneH);
      this.rows.push({ name, y, h, lanes });
      y += h;
    }
    const height = Math.max(y + 4, axisH + 60);
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== this.width * dpr || this.canvas.height !== height * dpr) {
      this.canvas.width = this.width * dpr;
      this.canvas.height = height * dpr;
      this.canvas.style.height = height + "px";
    }
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const C = this.colors;
    ctx.fillStyle = C.bg;
    ctx.fillRect(0, 0, this.width, height);
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";

    const x0 = labelW;
    const pxPerMs = (this.width - labelW) / (this.viewEnd - this.viewStart);
    const X = (t: number) => x0 + (t - this.viewStart) * pxPerMs;

    // Rows, alternating backgrounds and labels.
    this.rows.forEach((r, i) => {
      if (i % 2) { ctx.fillStyle = C["row-alt"]; ctx.fillRect(0, r.y, this.width, r.h); }
      const res = this.model.resources.get(r.name);
      ctx.fillStyle = C.fg;
      ctx.fillText(clip(r.name, 18), 8, r.y + 12);
      if (res) {
        ctx.fillStyle = C.muted;
        ctx.fillText(clip(`${res.capacity} ${res.unit}`, 20), 8, r.y + 28);
      }
      ctx.fillStyle = C.grid;
      ctx.fillRect(0, r.y + r.h - 1, this.width, 1);
    });

    // Axis and grid.
    const scale = scaleTime().domain([new Date(this.viewStart), new Date(this.viewEnd)]).range([x0, this.width]);
    const ticks = scale.ticks(Math.max(2, Math.floor((this.width - labelW) / 110)));
    const fmt = scale.tickFormat();
    ctx.fillStyle = C.grid;
    for (const t of ticks) ctx.fillRect(Math.round(scale(t)), axisH - 6, 1, height - axisH + 6);
    ctx.fillStyle = C.muted;
    for (const t of ticks) ctx.fillText(fmt(t), Math.round(scale(t)) + 3, axisH / 2);
    ctx.fillStyle = C.border;
    ctx.fillRect(0, axisH - 1, this.width, 1);
    ctx.fillRect(labelW - 1, 0, 1, height);

    // Free-capacity strip per resource: per pixel column the least free
    // fraction in it, coloured from "full" to "free" and drawn as opaque
    // runs (sub-pixel blocks drawn one by one would blend into mud).
    const cols = Math.max(this.width - labelW, 1);
    const full = rgb(C.full), free = rgb(C.free);
    for (const r of this.rows) {
      const res = this.model.resources.get(r.name);
      const blocks = this.model.free.get(r.name);
      if (!res || !blocks) continue;
      const frac = new Float32Array(cols).fill(-1);
      for (const b of blocks) {
        const c0 = Math.max(0, Math.floor(X(ms(b.start)) - x0));
        const c1 = Math.min(cols, Math.ceil(X(ms(b.end) || this.viewEnd) - x0));
        const f = res.capacity > 0 ? Math.max(0, Math.min(1, Number(b.free) / Number(res.capacity))) : 0;
        for (let c = c0; c < c1; c++) if (frac[c] < 0 || f < frac[c]) frac[c] = f;
      }
      const sy = r.y + rowPad - 3;
      for (let c = 0; c < cols; ) {
        const q = frac[c] < 0 ? -1 : Math.round(frac[c] * 32) / 32;
        let e = c + 1;
        while (e < cols && (frac[e] < 0 ? -1 : Math.round(frac[e] * 32) / 32) === q) e++;
        if (q >= 0) {
          ctx.fillStyle = `rgb(${mix(full[0], free[0], q)}, ${mix(full[1], free[1], q)}, ${mix(full[2], free[2], q)})`;
          ctx.fillRect(x0 + c, sy, e - c, stripH);
        }
        c = e;
      }
    }

    this.hitX.length = this.hitY.length = this.hitW.length = this.hitH.length = this.hitId.length = 0;
    const visibleIds = new Set<string>();
    const visible: Bar[] = [];
    let drawn = 0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(x0, axisH, this.width - x0, height - axisH);
    ctx.clip();
    for (const r of this.rows) {
      const list = this.byResource.get(r.name)!;
      const top = r.y + rowPad + stripH;
      if (aggregated) {
        this.drawAggregate(list, r, top, X, visibleIds, visible);
      } else {
        drawn += this.drawBars(list, r, top, X, visibleIds, visible);
      }
    }
    // Ghost bars: offers and the earliest fit, before anything is booked.
    if (this.ghosts.length) {
      ctx.setLineDash([5, 3]);
      ctx.lineWidth = 2;
      this.ghosts.forEach((g, gi) => {
        for (const r of this.rows) {
          if (!g.resources.includes(r.name)) continue;
          const gx = X(g.start), gw = Math.max(X(g.end) - gx, 2);
          if (gi > 0) {
            // Later offers: thin dashed marks along the row's bottom, so
            // that the earliest fit stays readable.
            ctx.strokeStyle = C.ghost;
            ctx.strokeRect(gx + 1, r.y + r.h - 4 - 3 * (gi % 3), gw - 2, 1);
            continue;
          }
          ctx.globalAlpha = 0.18;
          ctx.fillStyle = C.ghost;
          ctx.fillRect(gx, r.y + 2, gw, r.h - 4);
          ctx.globalAlpha = 1;
          ctx.strokeStyle = C.ghost;
          ctx.strokeRect(gx + 1, r.y + 3, gw - 2, r.h - 6);
          ctx.fillStyle = C.fg;
          if (gw > 40) ctx.fillText(fit(ctx, g.label, gw - 10), gx + 5, r.y + r.h - 14);
        }
      });
      ctx.setLineDash([]);
    }
    // The now-line.
    const nx = X(Date.now());
    if (nx >= x0 && nx <= this.width) {
      ctx.fillStyle = C.now;
      ctx.fillRect(Math.round(nx) - 1, axisH - 6, 2, height - axisH + 6);
    }
    ctx.restore();
    ctx.fillStyle = C.muted;
    for (const [py, text] of this.peaks) ctx.fillText(text, 8, py);
    this.peaks.length = 0;

    this.visible = visible;
    this.perf.lastBars = drawn;
    this.perf.lastVisible = visible.length;
    const end = performance.now();
    if (this.inputT !== null) {
      if (this.ready) this.perf.redraws.push(end - this.inputT);
      this.inputT = null;
    }
    if (this.ready && this.perf.first === null) {
      this.perf.first = end;
      performance.mark("ledgerd:first-render");
    }
    this.canvas.dataset.visible = String(visible.length);
    this.canvas.dataset.mode = aggregated ? "aggregated" : "bars";
    this.onFrame(visible);
  }

  private drawBars(list: Bar[], r: Row, top: number, X: (t: number) => number, seen: Set<string>, visible: Bar[]): number {
    const ctx = this.ctx, C = this.colors;
    const lane = this.lanes.get(r.name)!;
    const batches = new Map<string, number[]>();
    const labels: [string, number, number, number][] = [];
    const pend: number[] = [];
    const expiries: number[] = [];
    let n = 0;
    let overflow = 0;
    let sel: number[] | null = null;
    for (let j = 0; j < list.length; j++) {
      const b = list[j];
      if (b.start >= this.viewEnd) break;
      if (b.end <= this.viewStart && b.pendingEnd <= this.viewStart) continue;
      if (b.r.parts.length === 1) visible.push(b);
      else if (!seen.has(b.id)) { seen.add(b.id); visible.push(b); }
      const l = lane[j];
      if (l === maxLanes - 1) overflow++;
      const y = top + l * laneH + 1;
      const h = laneH - 3;
      const x = X(b.start);
      const w = Math.max(X(b.end) - x, 1.5);
      const color = barColor(b);
      let arr = batches.get(color);
      if (!arr) batches.set(color, (arr = []));
      arr.push(x, y, w, h);
      this.hitX.push(x); this.hitY.push(y); this.hitW.push(Math.max(w, 4)); this.hitH.push(h); this.hitId.push(b.id);
      if (b.pendingEnd) pend.push(X(b.pendingStart), y - 1, Math.max(X(b.pendingEnd) - X(b.pendingStart), 2), h + 2);
      if ((b.state === ReservationState.HELD || b.state === ReservationState.PENDING_APPROVAL) && b.holdExpires) expiries.push(X(b.holdExpires), y);
      // Ids on bars wide enough to read, but not in the last lane, where
      // overflowing bars pile up and their ids would be unreadable anyway.
      if (w > 34 && l < maxLanes - 1 && labels.length < 400) {
        labels.push([b.state === ReservationState.DEGRADED && b.r.shortUnits > 0n ? `${b.id} −${b.r.shortUnits}` : b.id, x, y + h / 2, w]);
      }
      if (b.id === this.selected) sel = [x, y, w, h];
      n++;
    }
    for (const [color, a] of batches) {
      ctx.fillStyle = C[color];
      ctx.globalAlpha = color === "muted" ? 0.45 : 1;
      ctx.beginPath();
      for (let i = 0; i < a.length; i += 4) ctx.rect(a[i], a[i + 1], a[i + 2], a[i + 3]);
      ctx.fill();
    }
    ctx.globalAlpha = 1;
    if (pend.length) {
      ctx.strokeStyle = C.pending;
      ctx.lineWidth = 2;
      ctx.setLineDash([4, 2]);
      for (let i = 0; i < pend.length; i += 4) ctx.strokeRect(pend[i], pend[i + 1], pend[i + 2], pend[i + 3]);
      ctx.setLineDash([]);
    }
    // A held bar's expiry: a tick where the hold lapses unless committed.
    if (expiries.length) {
      ctx.fillStyle = C.fg;
      for (let i = 0; i < expiries.length; i += 2) ctx.fillRect(expiries[i] - 1, expiries[i + 1] - 2, 2, laneH);
    }
    ctx.fillStyle = C["bar-text"];
    const charW = ctx.measureText("0000000000").width / 10;
    for (const [id, x, y, w] of labels) {
      const lx = Math.max(x, labelW) + 3;
      const room = x + w - lx - 3;
      if (room > 20) ctx.fillText(clip(id, Math.floor(room / charW)), lx, y);
    }
    if (sel) {
      ctx.strokeStyle = C.fg;
      ctx.lineWidth = 2;
      ctx.strokeRect(sel[0] - 1, sel[1] - 1, sel[2] + 2, sel[3] + 2);
    }
    if (overflow > 0) this.peaks.push([r.y + 44, `+${overflow} in the last lane`]);
    return n;
  }

  private drawAggregate(list: Bar[], r: Row, top: number, X: (t: number) => number, seen: Set<string>, visible: Bar[]): void {
    const ctx = this.ctx, C = this.colors;
    const res = this.model.resources.get(r.name);
    const cols = Math.max(this.width - labelW, 1);
    const classes = aggClasses;
    // Scratch arrays reused across rows and frames: allocating them per
    // frame showed up as garbage-collection pauses in the redraw p95.
    if (this.scratchCols !== cols) {
      this.scratchCols = cols;
      this.diff = classes.map(() => new Float64Array(cols + 1));
      this.heights = classes.map(() => new Float64Array(cols));
      this.base = new Float64Array(cols);
    }
    const diff = this.diff, heights = this.heights, base = this.base;
    for (const d of diff) d.fill(0);
    base.fill(0);
    let peak = 0;
    for (const b of list) {
      if (b.start >= this.viewEnd) break;
      if (b.end <= this.viewStart) continue;
      if (b.r.parts.length === 1) visible.push(b);
      else if (!seen.has(b.id)) { seen.add(b.id); visible.push(b); }
      let amount = 0;
      for (const p of b.r.parts) if (p.resource === r.name) amount += Number(p.amount);
      const c0 = Math.max(0, Math.floor(X(b.start) - labelW));
      const c1 = Math.min(cols, Math.max(c0 + 1, Math.ceil(X(b.end) - labelW)));
      const d = diff[classes.indexOf(barColor(b))];
      d[c0] += amount;
      d[c1] -= amount;
    }
    const run = classes.map(() => 0);
    for (let c = 0; c < cols; c++) {
      let sum = 0;
      for (let k = 0; k < classes.length; k++) { run[k] += diff[k][c]; heights[k][c] = run[k]; sum += run[k]; }
      if (sum > peak) peak = sum;
    }
    // Scaled to the busiest column in view, so the shape of the load shows
    // even on a large resource; the label says how that peak compares with
    // the capacity, and a line marks the capacity when it is in range.
    const capacity = res ? Number(res.capacity) : 0;
    const scale = peak > 0 ? aggH / Math.max(peak, 1) : 0;
    this.peaks.push([r.y + 44, capacity > 0 ? `peak ${Math.round(peak)} (${Math.round((100 * peak) / capacity)}%)` : `peak ${Math.round(peak)}`]);
    for (let k = 0; k < classes.length; k++) {
      ctx.fillStyle = C[classes[k]];
      ctx.globalAlpha = classes[k] === "muted" ? 0.45 : 1;
      ctx.beginPath();
      const hk = heights[k];
      for (let c = 0; c < cols; c++) {
        const h = hk[c] * scale;
        if (h <= 0) continue;
        // Merge runs of equal height into one rectangle.
        let e = c + 1;
        while (e < cols && hk[e] === hk[c] && base[e] === base[c]) e++;
        ctx.rect(labelW + c, top + aggH - base[c] - h, e - c, h);
        for (let j = c; j < e; j++) base[j] += h;
        c = e - 1;
      }
      ctx.fill();
    }
    ctx.globalAlpha = 1;
    if (capacity > 0 && capacity <= peak) {
      const cy = top + aggH - capacity * scale;
      ctx.fillStyle = C.degraded;
      ctx.fillRect(labelW, cy, cols, 1);
    }
  }
}

/** The red, green and blue of a #rrggbb (or #rgb) colour. */
function rgb(hex: string): [number, number, number] {
  let h = hex.replace("#", "");
  if (h.length === 3) h = h.split("").map((c) => c + c).join("");
  const n = parseInt(h, 16);
  return Number.isNaN(n) ? [128, 128, 128] : [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function mix(a: number, b: number, t: number): number {
  return Math.round(a + (b - a) * t);
}

const aggClasses = ["committed", "active", "held", "degraded", "job", "muted"];

function barColor(b: Bar): string {
  if (b.job) return b.state === ReservationState.COMPLETED ? "muted" : "job";
  switch (b.state) {
    case ReservationState.HELD: return "held";
    // Drawn like a hold (it holds capacity); the tooltip names the state.
    case ReservationState.PENDING_APPROVAL: return "held";
    case ReservationState.ACTIVE: return "active";
    case ReservationState.DEGRADED: return "degraded";
    case ReservationState.COMPLETED: return "muted";
    default: return "committed";
  }
}

/** s, cut with an ellipsis to fit width pixels in ctx's font. */
function fit(ctx: CanvasRenderingContext2D, s: string, width: number): string {
  if (ctx.measureText(s).width <= width) return s;
  let lo = 0, hi = s.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(s.slice(0, mid) + "…").width <= width) lo = mid; else hi = mid - 1;
  }
  return lo > 0 ? s.slice(0, lo) + "…" : "";
}

function clip(s: string, n: number): string {
  if (n < 2) return "";
  return s.length <= n ? s : s.slice(0, n - 1) + "…";
}

export { stateName };
