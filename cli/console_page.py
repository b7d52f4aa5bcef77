"""The console's one page. Everything from the server is put in with
``textContent`` (never as markup); the token is embedded as a JSON string."""

PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Agent turns waiting for approval</title>
<style>
 body{font-family:system-ui,sans-serif;margin:1.5rem;background:#f6f7f9;color:#1b1f24}
 h1{font-size:1.3rem;margin:0 0 .3rem} .muted{color:#57606a;font-size:.9rem}
 .turn{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:1rem;margin:1rem 0}
 .turn h2{font-size:1.05rem;margin:0 0 .3rem;font-family:ui-monospace,monospace}
 .call h3{font-size:.95rem;margin:.8rem 0 .2rem}
 pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.6rem;overflow:auto;
     font-size:.82rem;line-height:1.35;max-height:30rem;margin:.2rem 0;white-space:pre-wrap;word-break:break-word}
 .add{color:#116329;background:#dafbe1;display:block} .del{color:#82071e;background:#ffebe9;display:block}
 .hunk{color:#0550ae;display:block} .warn{color:#9a6700;font-weight:600}
 button{font-size:.95rem;padding:.4rem 1rem;border-radius:6px;border:1px solid #d0d7de;cursor:pointer;margin-right:.5rem}
 .approve{background:#1f883d;color:#fff;border-color:#1a7f37} .reject{background:#fff;color:#cf222e}
 input{font-size:.95rem;padding:.35rem;width:22rem;border:1px solid #d0d7de;border-radius:6px;margin-right:.5rem}
 #status{min-height:1.2rem}
</style></head>
<body>
<h1>Agent turns waiting for approval</h1>
<div class="muted" id="status">loading…</div>
<div id="turns"></div>
<script>
const TOKEN = __TOKEN__;
const params = new URLSearchParams(location.search);
const q = params.get("token") ? "?token=" + encodeURIComponent(params.get("token")) : "";
let busy = false, last = "";

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function diffBlock(text) {
  const pre = el("pre");
  for (const line of text.split("\n")) {
    const body = line.replace(/^  /, "");
    let cls = "";
    if (body.startsWith("@@")) cls = "hunk";
    else if (body.startsWith("+") && !body.startsWith("+++")) cls = "add";
    else if (body.startsWith("-") && !body.startsWith("---")) cls = "del";
    const span = el("span", cls, line + "\n");
    pre.appendChild(span);
  }
  return pre;
}

async function decide(turn, approve, reasonInput, buttons) {
  buttons.forEach(b => b.disabled = true);
  document.getElementById("status").textContent = (approve ? "approving " : "rejecting ") + turn.turn_id + "…";
  try {
    const r = await fetch("/api/decide" + q, {method: "POST",
      headers: {"Content-Type": "application/json", "X-Console-Token": TOKEN},
      body: JSON.stringify({turn_id: turn.turn_id, digest: turn.digest, approve, reason: reasonInput.value})});
    const data = await r.json();
    document.getElementById("status").textContent = data.message || data.error || ("HTTP " + r.status);
  } catch (e) {
    document.getElementById("status").textContent = "the console did not answer: " + e;
  }
  last = "";
  refresh();
}

function render(turns) {
  const root = document.getElementById("turns");
  root.replaceChildren();
  if (!turns.length) { root.appendChild(el("p", "muted", "No turn is waiting for approval.")); return; }
  for (const t of turns) {
    const box = el("section", "turn");
    box.dataset.turn = t.turn_id;
    box.appendChild(el("h2", "", t.turn_id));
    box.appendChild(el("div", "muted", [t.workspace && ("workspace " + t.workspace), "queue " + t.task_queue,
      t.started && ("started " + t.started), t.short_digest && ("digest " + t.short_digest)].filter(Boolean).join(" · ")));
    if (t.stuck) { box.appendChild(el("pre", "warn", t.stuck)); root.appendChild(box); continue; }
    if (t.problem) { box.appendChild(el("p", "warn", t.problem)); root.appendChild(box); continue; }
    if (t.ignored) box.appendChild(el("p", "warn", "last decision ignored: " + t.ignored));
    for (const c of t.calls) {
      const call = el("div", "call");
      call.appendChild(el("h3", "", c.title + " — " + c.reason));
      call.appendChild(diffBlock(c.text));
      box.appendChild(call);
    }
    const reason = el("input"); reason.placeholder = "reason (optional for approve)";
    const yes = el("button", "approve", "Approve"), no = el("button", "reject", "Reject");
    yes.onclick = () => decide(t, true, reason, [yes, no]);
    no.onclick = () => decide(t, false, reason, [yes, no]);
    const row = el("div"); row.style.marginTop = ".8rem";
    row.append(reason, yes, no);
    box.appendChild(row);
    root.appendChild(box);
  }
}

async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const r = await fetch("/api/turns" + q);
    const text = await r.text();
    if (!r.ok) { document.getElementById("status").textContent = text; return; }
    // Re-render only on change, so a reason being typed is not wiped.
    if (text !== last) { last = text; render(JSON.parse(text).turns); }
    if (document.getElementById("status").textContent === "loading…")
      document.getElementById("status").textContent = "refreshes every 2 s";
  } catch (e) {
    document.getElementById("status").textContent = "the console did not answer: " + e;
  } finally { busy = false; }
}
refresh();
setInterval(refresh, 2000);
</script>
</body></html>
"""
