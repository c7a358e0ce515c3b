// Small DOM helpers. Every string reaches the page through textContent or
// a DOM property, never through innerHTML: ids, labels and names are user
// data and must show as text.
import type { ResourceAmount } from "./gen/ledgerd/v1/types_pb";

export function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error("missing element #" + id);
  return e;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: { [k: string]: string }, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(typeof c === "string" ? document.createTextNode(c) : c);
  return e;
}

const fmt = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" });

export function fmtTime(t: number): string {
  return t ? fmt.format(new Date(t)) : "—";
}

export function partsText(parts: ResourceAmount[]): string {
  return parts.map((p) => `${p.resource}=${p.amount}`).join(", ");
}

/** Value for a datetime-local input showing t in local time. */
export function toLocalInput(t: number): string {
  const d = new Date(t - new Date(t).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** Parses a datetime-local input value (local time); NaN when empty. */
export function fromLocalInput(v: string): number {
  return v ? new Date(v).getTime() : NaN;
}
