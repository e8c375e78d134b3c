// @ts-check
/* global document */
import { h } from "../shared/dom.js";
import { number } from "../shared/format.js";

// A chart of verdicts over time, drawn by the page itself as SVG (no chart library, no CDN: docs/adr/0015):
// a bar per bucket, stacked by outcome, with the same numbers in a table for screen readers (the
// drawing is hidden from them) and a legend that says what each outcome means.

const SVG = "http://www.w3.org/2000/svg";

/** The outcomes, in the order of the stack, bottom up: their words and what they mean. */
export const OUTCOMES = /** @type {const} */ ([
  ["valid", "Valid", "let through"],
  ["restricted", "Restricted", "refused by a restriction: address, referrer, method or path"],
  ["rateLimited", "Rate limited", "refused: a rate limit was reached"],
  ["usageExceeded", "Out of credits", "refused: no credits were left"],
  ["forbidden", "Forbidden", "refused: the key may not reach that path"],
  ["disabled", "Disabled", "refused: the key was disabled"],
  ["expired", "Expired", "refused: the key had expired"],
]);

/** @typedef {{ start: string, credits: number } & Record<typeof OUTCOMES[number][0], number>} Bucket */

const HOUR = new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit", timeZone: "UTC" });
const DAY = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "short", timeZone: "UTC" });

/**
 * A bucket's start in words: "14:00" for an hour, "23 Nov" for a day (UTC).
 * @param {string} start
 * @param {string} interval
 */
export function bucketLabel(start, interval) {
  return (interval === "day" ? DAY : HOUR).format(new Date(start));
}

/** @param {Bucket} b */
export const requestsOf = (b) => OUTCOMES.reduce((n, [o]) => n + b[o], 0);

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attributes
 * @param {...(Node | string)} children
 */
function svg(tag, attributes, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

/** The legend: each outcome's colour, its name and what it means. */
export function legend() {
  return h("ul", { class: "legend", "aria-label": "What the colours mean" },
    ...OUTCOMES.map(([o, name, meaning]) => h("li", {}, h("span", { class: `swatch outcome-${o}`, "aria-hidden": "true" }), h("strong", {}, name), ` — ${meaning}`)));
}

/**
 * A figure: a sentence of totals, the stacked bars, and the table of every bucket's numbers.
 * @param {{ id: string, title: string, interval: string, buckets: Bucket[] }} chart
 */
export function usageChart({ id, title, interval, buckets }) {
  const totals = OUTCOMES.map(([o, name]) => [name, buckets.reduce((n, b) => n + b[o], 0)]);
  const all = totals.reduce((n, [, count]) => n + Number(count), 0);
  const said = all === 0 ? "No requests." : `${number(all)} requests: ${totals.filter(([, n]) => n).map(([name, n]) => `${number(Number(n))} ${String(name).toLowerCase()}`).join(", ")}.`;
  return h("figure", { class: "usage-chart", "aria-labelledby": `${id}-title` },
    h("figcaption", {}, h("strong", { id: `${id}-title` }, title), " ", said),
    bars(buckets, interval),
    h("table", { class: "vh", id: `${id}-table` },
      h("caption", {}, `${title}, by ${interval} (UTC)`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, interval === "day" ? "Day" : "Hour"), ...OUTCOMES.map(([, name]) => h("th", { scope: "col" }, name)), h("th", { scope: "col" }, "Credits spent"))),
      h("tbody", {}, ...buckets.map((b) => h("tr", {},
        h("th", { scope: "row" }, bucketLabel(b.start, interval)), ...OUTCOMES.map(([o]) => h("td", {}, number(b[o]))), h("td", {}, number(b.credits)))))));
}

const WIDTH = 720;
const HEIGHT = 180;
const LEFT = 48;
const BOTTOM = 22;

/**
 * The stacked bars, hidden from screen readers (the table says the same); each bar's title for a pointer.
 * @param {Bucket[]} buckets
 * @param {string} interval
 */
function bars(buckets, interval) {
  const top = Math.max(1, ...buckets.map(requestsOf));
  const plot = { w: WIDTH - LEFT, h: HEIGHT - BOTTOM };
  const step = plot.w / buckets.length;
  const drawing = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "bars", "aria-hidden": "true", focusable: "false" },
    svg("line", { x1: LEFT, y1: plot.h, x2: WIDTH, y2: plot.h, class: "axis" }),
    svg("text", { x: LEFT - 6, y: 12, class: "tick", "text-anchor": "end" }, number(top)),
    svg("text", { x: LEFT - 6, y: plot.h, class: "tick", "text-anchor": "end" }, "0"));
  buckets.forEach((b, i) => {
    const x = LEFT + i * step + step * 0.1;
    const bar = svg("g", {}, svg("title", {}, `${bucketLabel(b.start, interval)}: ${number(requestsOf(b))} requests`));
    let y = plot.h;
    for (const [o] of OUTCOMES) {
      if (!b[o]) continue;
      const height = (b[o] / top) * (plot.h - 14);
      y -= height;
      bar.append(svg("rect", { x, y, width: step * 0.8, height, class: `outcome-${o}` }));
    }
    drawing.append(bar);
    // The first, middle and last buckets named under the axis, the ends held inside the drawing.
    const anchor = i === 0 ? "start" : i === buckets.length - 1 ? "end" : i === Math.floor(buckets.length / 2) ? "middle" : undefined;
    if (anchor) drawing.append(svg("text", { x: anchor === "start" ? x : anchor === "end" ? x + step * 0.8 : x + step * 0.4, y: HEIGHT - 4, class: "tick", "text-anchor": anchor }, bucketLabel(b.start, interval)));
  });
  return drawing;
}
