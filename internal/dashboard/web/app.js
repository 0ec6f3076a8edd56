// The fleet view. The server sends a snapshot of every pull-model Application's entry, then the
// entries that changed (Server-Sent Events). The page groups entries into cells (cluster x
// ApplicationSet), filters rows, and draws only the rows in view, so 5,000 clusters cost what 40
// do. Everything the hub holds is shown as text (textContent), never parsed as HTML.
'use strict';

const ORDER = ['failing', 'stale', 'progressing', 'outofsync', 'unknown', 'healthy'];
const NO_APPSET = '';

const S = {
  clusters: new Map(),   // name -> {n, l, a}
  appSets: new Map(),    // key -> {k, steps, pa}
  entries: new Map(),    // hub Application key -> entry
  cells: new Map(),      // cluster -> Map(appSet key -> Set(entry keys))
  version: 0,
  argocdURL: '',
  rows: [],              // cluster names shown, in order
  cols: [],              // appSet keys shown, in order
  focus: { row: 0, col: 0 },
  open: null,            // {cluster, col} of the open detail
  dirty: true,
  connected: false,
  lastEvent: 0,
};

// What the benchmark and the browser tests read.
window.fleetView = { ready: false, firstPaint: 0, version: 0, rendered: 0, renders: 0 };

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

// ---- data -------------------------------------------------------------------------------------

function place(e) {
  let byCol = S.cells.get(e.c);
  if (!byCol) { byCol = new Map(); S.cells.set(e.c, byCol); }
  const col = e.s || NO_APPSET;
  let keys = byCol.get(col);
  if (!keys) { keys = new Set(); byCol.set(col, keys); }
  keys.add(e.k);
}

function unplace(e) {
  const byCol = S.cells.get(e.c);
  if (!byCol) return;
  const col = e.s || NO_APPSET;
  const keys = byCol.get(col);
  if (!keys) return;
  keys.delete(e.k);
  if (keys.size === 0) byCol.delete(col);
  if (byCol.size === 0) S.cells.delete(e.c);
}

function setEntry(e) {
  const old = S.entries.get(e.k);
  if (old) unplace(old);
  S.entries.set(e.k, e);
  place(e);
}

function removeEntry(k) {
  const old = S.entries.get(k);
  if (!old) return;
  unplace(old);
  S.entries.delete(k);
}

function loadSnapshot(s) {
  S.clusters.clear(); S.appSets.clear(); S.entries.clear(); S.cells.clear();
  for (const c of s.clusters || []) S.clusters.set(c.n, c);
  for (const a of s.appSets || []) S.appSets.set(a.k, a);
  for (const e of s.entries || []) setEntry(e);
  S.version = s.version;
  changed();
}

function applyDelta(d) {
  for (const c of d.clusters || []) S.clusters.set(c.n, c);
  for (const n of d.removedClusters || []) S.clusters.delete(n);
  for (const a of d.appSets || []) S.appSets.set(a.k, a);
  for (const k of d.removedAppSets || []) S.appSets.delete(k);
  for (const e of d.entries || []) setEntry(e);
  for (const k of d.removed || []) removeEntry(k);
  S.version = d.version;
  changed(d);
}

// ---- cells ------------------------------------------------------------------------------------

function cellEntries(cluster, col) {
  const keys = S.cells.get(cluster)?.get(col);
  if (!keys) return [];
  return [...keys].map((k) => S.entries.get(k)).filter(Boolean).sort((a, b) => a.k.localeCompare(b.k));
}

function worst(entries) {
  let best = ORDER.length - 1;
  for (const e of entries) best = Math.min(best, Math.max(0, ORDER.indexOf(e.st)));
  return ORDER[best];
}

function cellText(entries) {
  if (entries.length === 0) return '–';
  const e = entries[0];
  let t = entries.length > 1 ? `${entries.length} apps` : `${e.sy} ${e.h}`;
  if (e.ro && e.step) t = `step ${e.step} ${e.ro} · ` + t;
  return t;
}

// ---- filters ----------------------------------------------------------------------------------

function parseSelector(text) {
  const terms = [];
  for (const raw of text.split(',')) {
    const t = raw.trim();
    if (!t) continue;
    let m;
    if ((m = t.match(/^([^!=]+)!=(.*)$/))) terms.push({ key: m[1].trim(), op: '!=', value: m[2].trim() });
    else if ((m = t.match(/^([^!=]+)==?(.*)$/))) terms.push({ key: m[1].trim(), op: '=', value: m[2].trim() });
    else if (t.startsWith('!')) terms.push({ key: t.slice(1).trim(), op: '!' });
    else terms.push({ key: t, op: 'exists' });
  }
  return terms;
}

function labelsMatch(labels, terms) {
  labels = labels || {};
  return terms.every((t) => {
    const has = Object.prototype.hasOwnProperty.call(labels, t.key);
    switch (t.op) {
      case '=': return has && labels[t.key] === t.value;
      case '!=': return !has || labels[t.key] !== t.value;
      case '!': return !has;
      default: return has;
    }
  });
}

function colLabel(key) {
  if (key === NO_APPSET) return '(no ApplicationSet)';
  const namespaces = new Set([...S.appSets.keys()].map((k) => k.split('/')[0]));
  return namespaces.size > 1 ? key : key.slice(key.indexOf('/') + 1);
}

function computeLayout() {
  const name = $('f-name').value.trim().toLowerCase();
  const terms = parseSelector($('f-labels').value);
  const appset = $('f-appset').value.trim().toLowerCase();
  const state = $('f-state').value;

  const colSet = new Set(S.appSets.keys());
  for (const e of S.entries.values()) colSet.add(e.s || NO_APPSET);
  S.cols = [...colSet].filter((k) => !appset || colLabel(k).toLowerCase().includes(appset))
    .sort((a, b) => (a === NO_APPSET) - (b === NO_APPSET) || a.localeCompare(b));

  const names = new Set(S.clusters.keys());
  for (const c of S.cells.keys()) names.add(c);
  S.rows = [...names].filter((n) => {
    if (name && !n.toLowerCase().includes(name)) return false;
    if (terms.length && !labelsMatch(S.clusters.get(n)?.l, terms)) return false;
    if (!state) return true;
    const byCol = S.cells.get(n);
    if (!byCol) return false;
    return S.cols.some((col) => cellEntries(n, col).some((e) => (state === 'paused' ? e.pa : e.st === state)));
  }).sort();
  $('shown').textContent = `${S.rows.length.toLocaleString()} of ${names.size.toLocaleString()} clusters · ${S.entries.size.toLocaleString()} Applications`;
  $('grid').setAttribute('aria-rowcount', String(S.rows.length + 1));
  $('grid').setAttribute('aria-colcount', String(S.cols.length + 1));
  S.focus.row = Math.min(S.focus.row, Math.max(0, S.rows.length - 1));
  S.focus.col = Math.min(S.focus.col, Math.max(0, S.cols.length - 1));
}

// ---- drawing ----------------------------------------------------------------------------------

function rowHeight() {
  return parseFloat(getComputedStyle(document.documentElement).getPropertyValue('--row')) || 26;
}

function drawHead() {
  const head = $('head');
  head.replaceChildren();
  const corner = el('div', 'key', 'cluster');
  corner.setAttribute('role', 'columnheader');
  head.append(corner);
  const counts = new Map(S.cols.map((c) => [c, { total: 0 }]));
  const rollout = new Map();
  for (const e of S.entries.values()) {
    const c = counts.get(e.s || NO_APPSET);
    if (!c) continue;
    c.total++;
    c[e.st] = (c[e.st] || 0) + 1;
    if (e.pa) c.paused = (c.paused || 0) + 1;
    if (e.ro && e.ro !== 'Healthy' && e.step) {
      const step = parseInt(e.step, 10);
      if (!rollout.has(e.s) || step < rollout.get(e.s)) rollout.set(e.s, step);
    }
  }
  for (const col of S.cols) {
    const h = el('div', 'col');
    h.setAttribute('role', 'columnheader');
    h.dataset.appset = col;
    const title = el('b', '', colLabel(col));
    h.title = col || 'Applications without an ApplicationSet';
    h.append(title);
    const c = counts.get(col);
    const parts = [`${c.total} apps`];
    for (const st of ['healthy', 'progressing', 'outofsync', 'failing', 'stale', 'unknown', 'paused']) {
      if (c[st]) parts.push(`${c[st]} ${st === 'outofsync' ? 'out of sync' : st}`);
    }
    h.append(el('span', 'count', parts.join(' · ')));
    const a = S.appSets.get(col);
    if (a?.steps) {
      const step = rollout.get(col);
      h.append(el('span', 'count rollout', step ? `RollingSync step ${step} of ${a.steps}` : `RollingSync: all ${a.steps} steps done`));
    }
    if (a?.pa) h.append(el('span', 'count', 'ApplicationSet paused'));
    head.append(h);
  }
}

function drawRows() {
  const body = $('body');
  const rowsEl = $('rows');
  const h = rowHeight();
  rowsEl.style.height = `${S.rows.length * h}px`;
  const first = Math.max(0, Math.floor(body.scrollTop / h) - 5);
  const last = Math.min(S.rows.length, Math.ceil((body.scrollTop + body.clientHeight) / h) + 5);
  const frag = document.createDocumentFragment();
  for (let r = first; r < last; r++) {
    const name = S.rows[r];
    const row = el('div', 'row');
    row.setAttribute('role', 'row');
    row.setAttribute('aria-rowindex', String(r + 2));
    row.style.top = `${r * h}px`;
    const cluster = S.clusters.get(name);
    const key = el('div', 'key', name);
    key.setAttribute('role', 'rowheader');
    key.title = name + (cluster?.l ? '\n' + Object.entries(cluster.l).map(([k, v]) => `${k}=${v}`).join('\n') : '');
    if (cluster && cluster.a !== 'True') key.classList.add('unavailable');
    row.append(key);
    S.cols.forEach((col, c) => {
      const wrap = el('div', 'col');
      const entries = cellEntries(name, col);
      const cell = el('div', 'cell');
      cell.setAttribute('role', 'gridcell');
      cell.dataset.cluster = name;
      cell.dataset.appset = col;
      cell.dataset.row = String(r);
      cell.dataset.col = String(c);
      cell.tabIndex = r === S.focus.row && c === S.focus.col ? 0 : -1;
      if (entries.length === 0) {
        cell.classList.add('empty');
        cell.textContent = '–';
        cell.dataset.state = 'none';
      } else {
        const st = worst(entries);
        cell.classList.add('s-' + st);
        cell.dataset.state = st;
        if (entries.some((e) => e.pa)) {
          cell.dataset.paused = 'true';
          cell.append(el('i', 'paused-mark', 'Ⅱ'));
        }
        cell.append(document.createTextNode(cellText(entries)));
        cell.title = entries.map((e) => `${e.k}: ${e.sy} ${e.h}${e.p ? ' ' + e.p : ''}${e.e ? '\n' + e.e : ''}`).join('\n');
      }
      cell.setAttribute('aria-label', `${name}, ${colLabel(col)}: ${cell.dataset.state === 'none' ? 'no Application' : cell.title}`);
      wrap.append(cell);
      row.append(wrap);
    });
    frag.append(row);
  }
  rowsEl.replaceChildren(frag);
}

let frame = 0;
let layoutDirty = true;

function changed(delta) {
  layoutDirty = true;
  if (S.open && delta && (delta.entries || []).concat(delta.removed || []).some((e) => (e.c || S.entries.get(e)?.c) === S.open.cluster)) {
    openDetail(S.open.cluster, S.open.col, false);
  }
  schedule();
}

function schedule() {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const hadFocus = document.activeElement?.classList.contains('cell');
    if (layoutDirty) { computeLayout(); drawHead(); layoutDirty = false; }
    drawRows();
    if (hadFocus) focusCell(false);
    const fv = window.fleetView;
    fv.version = S.version;
    fv.rendered = Date.now();
    fv.renders++;
    if (!fv.ready) { fv.ready = true; fv.firstPaint = performance.now(); document.body.dataset.ready = 'true'; }
    document.body.dataset.version = String(S.version);
  });
}

// ---- keyboard and detail ----------------------------------------------------------------------

function focusCell(scroll) {
  const h = rowHeight();
  const body = $('body');
  if (scroll) {
    const top = S.focus.row * h;
    if (top < body.scrollTop) body.scrollTop = top;
    else if (top + h > body.scrollTop + body.clientHeight) body.scrollTop = top + h - body.clientHeight;
    drawRows();
  }
  const cell = $('rows').querySelector(`.cell[data-row="${S.focus.row}"][data-col="${S.focus.col}"]`);
  if (cell) cell.focus({ preventScroll: true });
}

function onGridKey(ev) {
  const page = Math.max(1, Math.floor($('body').clientHeight / rowHeight()) - 1);
  const moves = {
    ArrowDown: [1, 0], ArrowUp: [-1, 0], ArrowRight: [0, 1], ArrowLeft: [0, -1],
    PageDown: [page, 0], PageUp: [-page, 0],
  };
  if (ev.key in moves) {
    const [dr, dc] = moves[ev.key];
    S.focus.row = Math.max(0, Math.min(S.rows.length - 1, S.focus.row + dr));
    S.focus.col = Math.max(0, Math.min(S.cols.length - 1, S.focus.col + dc));
  } else if (ev.key === 'Home') {
    S.focus.col = 0;
    if (ev.ctrlKey) S.focus.row = 0;
  } else if (ev.key === 'End') {
    S.focus.col = S.cols.length - 1;
    if (ev.ctrlKey) S.focus.row = S.rows.length - 1;
  } else if (ev.key === 'Enter' || ev.key === ' ') {
    openDetail(S.rows[S.focus.row], S.cols[S.focus.col], true);
    ev.preventDefault();
    return;
  } else {
    return;
  }
  ev.preventDefault();
  focusCell(true);
}

function dl(pairs) {
  const d = el('dl');
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    d.append(el('dt', '', k));
    const dd = el('dd');
    if (v instanceof Node) dd.append(v); else dd.textContent = String(v);
    d.append(dd);
  }
  return d;
}

async function openDetail(cluster, col, moveFocus) {
  if (cluster === undefined || col === undefined) return;
  S.open = { cluster, col };
  const panel = $('detail');
  const body = $('detail-body');
  const entries = cellEntries(cluster, col);
  const details = await Promise.all(entries.map((e) =>
    fetch('api/detail?app=' + encodeURIComponent(e.k)).then((r) => (r.ok ? r.json() : null)).catch(() => null)));
  if (!S.open || S.open.cluster !== cluster || S.open.col !== col) return;
  const out = [el('h2', '', `${cluster} · ${colLabel(col)}`)];
  const c = S.clusters.get(cluster);
  out.push(dl([
    ['cluster available', c ? c.a : 'no ManagedCluster on the hub'],
    ['labels', c?.l ? Object.entries(c.l).map(([k, v]) => `${k}=${v}`).join(', ') : ''],
  ]));
  if (entries.length === 0) out.push(el('p', '', 'No pull-model Application of this ApplicationSet targets this cluster.'));
  details.forEach((d, i) => {
    const e = d || entries[i];
    const box = el('section', 'entry');
    box.dataset.app = e.k;
    const [ns, name] = e.k.split('/');
    box.append(el('h3', '', name));
    let link = '';
    if (S.argocdURL) {
      link = el('a', '', 'open in Argo CD');
      link.href = `${S.argocdURL.replace(/\/$/, '')}/applications/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
      link.target = '_blank';
      link.rel = 'noopener noreferrer';
    }
    box.append(dl([
      ['hub Application', link || e.k],
      ['kubectl', el('code', '', `kubectl get applications.argoproj.io -n ${ns} ${name} -o yaml`)],
      ['state', e.st + (e.pa ? ' (paused)' : '')],
      ['sync', e.sy], ['health', e.h], ['revision', e.r],
      ['operation', e.p ? `${e.p}${d?.startedAt ? ' since ' + d.startedAt : ''}` : ''],
      ['RollingSync', e.step ? `step ${e.step}: ${e.ro}${d?.rolloutMessage ? ' (' + d.rolloutMessage + ')' : ''}` : ''],
      ['paused', d?.pausedMessage],
      ['ManifestWork', d?.workName ? `${d.workNamespace}/${d.workName}` : 'none yet'],
    ]));
    if (d?.conditions?.length) {
      box.append(el('h3', '', 'Conditions'));
      const ul = el('ul');
      for (const cond of d.conditions) ul.append(el('li', '', `${cond.type}: ${cond.message || ''}`));
      box.append(ul);
    }
    if (d) {
      box.append(el('h3', '', `Resources (${d.resourcesTotal})`));
      const ul = el('ul');
      for (const r of d.resources || []) ul.append(el('li', '', `${r.kind} ${r.namespace ? r.namespace + '/' : ''}${r.name}`));
      if (d.resourcesTotal > (d.resources || []).length) ul.append(el('li', '', `… ${d.resourcesTotal - d.resources.length} more`));
      box.append(ul);
    }
    out.push(box);
  });
  body.replaceChildren(...out);
  panel.hidden = false;
  if (moveFocus) panel.focus();
}

function closeDetail() {
  S.open = null;
  $('detail').hidden = true;
  focusCell(false);
}

// ---- wiring -----------------------------------------------------------------------------------

function connect() {
  const es = new EventSource('api/events');
  es.addEventListener('snapshot', (ev) => { S.connected = true; S.lastEvent = Date.now(); loadSnapshot(JSON.parse(ev.data)); status(); });
  es.addEventListener('delta', (ev) => { S.lastEvent = Date.now(); applyDelta(JSON.parse(ev.data)); status(); });
  es.onerror = () => { S.connected = false; status(); };
}

function status() {
  const live = $('live');
  if (!S.connected) {
    live.textContent = 'reconnecting…';
    live.classList.add('down');
    return;
  }
  live.classList.remove('down');
  const ago = Math.round((Date.now() - S.lastEvent) / 1000);
  live.textContent = `live · last change ${ago < 2 ? 'just now' : ago + ' s ago'}`;
}

function init() {
  fetch('api/config').then((r) => r.json()).then((c) => { S.argocdURL = c.argocdURL || ''; }).catch(() => {});
  for (const id of ['f-name', 'f-labels', 'f-appset', 'f-state']) {
    $(id).addEventListener('input', () => { S.focus.row = 0; layoutDirty = true; $('body').scrollTop = 0; schedule(); });
  }
  $('filters').addEventListener('submit', (ev) => ev.preventDefault());
  $('body').addEventListener('scroll', () => schedule());
  window.addEventListener('resize', () => schedule());
  $('rows').addEventListener('keydown', onGridKey);
  $('rows').addEventListener('click', (ev) => {
    const cell = ev.target.closest('.cell');
    if (!cell) return;
    S.focus = { row: +cell.dataset.row, col: +cell.dataset.col };
    focusCell(false);
    openDetail(cell.dataset.cluster, cell.dataset.appset, false);
  });
  $('close').addEventListener('click', closeDetail);
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && !$('detail').hidden) { closeDetail(); ev.preventDefault(); }
    if (ev.key === '/' && !(ev.target instanceof HTMLInputElement)) { $('f-name').focus(); ev.preventDefault(); }
  });
  setInterval(status, 1000);
  connect();
}

init();
