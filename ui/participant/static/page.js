// The participant's page (docs/participant-page.md). Every text a person, a researcher or a
// model wrote is set with textContent: nothing here is ever parsed as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(window.location.search);
  const NOT_VALID = "This link is not valid. Open the study link you were given again, or contact the researcher.";
  const STAGES = ["consent", "pre_survey", "post_survey", "lobby", "room", "exit"];
  const SECTIONS = { consent: "consent", pre_survey: "survey", post_survey: "survey", lobby: "lobby", room: "room", exit: "exit" };
  const INTROS = {
    pre_survey: "Before the conversation, a few questions. Answer each one, then press Continue.",
    post_survey: "The conversation has ended. A few last questions: answer each one, then press Continue.",
  };
  const state = {
    token: params.get("p"),
    view: null,
    rendered: {},        // what each section was last drawn from (a form is never redrawn under the person)
    messages: new Map(), // seq -> <li>
    drafts: new Map(),   // seq -> <li> of a streaming reply
    clockAt: 0,          // when the view's clock fields were received (performance.now)
    source: null,
    retry: 1000,
    sending: false,
    follow: true,        // the chat shows its newest message (the person has not scrolled up)
    requestId: null,
    requestText: null,
    compose: freshCompose(), // how the message in the box is being written (signals, issue 34)
    surveyPasted: {},        // question name -> characters pasted into its answer
    attentionId: null,       // the attention check the dialog shows
    boxHadFocus: false,      // the message box had the keyboard when the rules closed it
  };

  function freshCompose() {
    return { start: null, pasted: 0, typed: 0, focusLost: 0 };
  }

  // -- talking to the server ----------------------------------------------------------------

  async function call(path, body) {
    const headers = { "Content-Type": "application/json" };
    if (state.token) headers["X-Participant-Token"] = state.token;
    let response;
    try {
      response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body || {}), cache: "no-store", credentials: "omit" });
    } catch (error) {
      outage(true);
      return { ok: false, status: 0, body: { error: $("outage").textContent } };
    }
    let data = {};
    try { data = await response.json(); } catch (error) { data = {}; }
    if (response.status === 503) outage(true);
    return { ok: response.ok, status: response.status, body: data };
  }

  function outage(down) {
    $("outage").hidden = !down;
  }

  function refuse(text) {
    show("refused");
    $("withdraw-box").hidden = true;
    $("refused-text").textContent = text;
    if (state.source) { state.source.close(); state.source = null; }
  }

  async function join() {
    const code = params.get("study");
    if (!code) {
      refuse("This link is incomplete: it has no study code. Open the link you were given.");
      return;
    }
    const labels = {};
    for (const [key, value] of params.entries()) {
      if (key !== "study" && key !== "p" && key !== "room" && !(key in labels)) labels[key] = value;
    }
    const answer = await call("/study/api/join", { study: code, params: labels });
    if (!answer.ok) {
      if (answer.status === 0 || answer.status === 503) { setTimeout(join, 2000); return; }
      refuse(answer.body.error || NOT_VALID);
      return;
    }
    state.token = answer.body.token;
    params.set("p", state.token);
    // The token goes into the address: a reload or a copied address returns to the same place.
    window.history.replaceState(null, "", window.location.pathname + "?" + params.toString());
    listen();
  }

  function listen() {
    if (state.source) state.source.close();
    const source = new EventSource("/study/api/events?p=" + encodeURIComponent(state.token));
    state.source = source;
    let lostSince = null;
    source.onopen = () => { state.retry = 1000; lostSince = null; outage(false); };
    source.addEventListener("view", (e) => render(JSON.parse(e.data)));
    source.addEventListener("message", (e) => addMessage(JSON.parse(e.data)));
    source.addEventListener("typing", (e) => setTyping(JSON.parse(e.data)));
    source.addEventListener("draft", (e) => setDraft(JSON.parse(e.data)));
    source.addEventListener("outage", (e) => outage(JSON.parse(e.data).down));
    source.addEventListener("gone", () => refuse(NOT_VALID));
    source.onerror = () => {
      // Lost: the browser reconnects by itself while the stream can be resumed; when it gave
      // up (the server answered with an error, a proxy had no server), we try again ourselves.
      lostSince = lostSince || Date.now();
      setTimeout(() => { if (lostSince && Date.now() - lostSince >= 700) outage(true); }, 750);
      if (source.readyState === EventSource.CLOSED) {
        setTimeout(reconnect, state.retry);
        state.retry = Math.min(state.retry * 2, 10000);
      }
    };
  }

  async function reconnect() {
    let response;
    try {
      response = await fetch("/study/api/view?p=" + encodeURIComponent(state.token), { cache: "no-store", credentials: "omit" });
    } catch (error) {
      setTimeout(reconnect, state.retry);
      state.retry = Math.min(state.retry * 2, 10000);
      return;
    }
    if (response.status === 403) { refuse(NOT_VALID); return; }
    if (!response.ok) {
      setTimeout(reconnect, state.retry);
      state.retry = Math.min(state.retry * 2, 10000);
      return;
    }
    listen();
  }

  // -- drawing the stages ------------------------------------------------------------------

  function show(section) {
    $("loading").hidden = true;
    for (const el of document.querySelectorAll("section.stage")) el.hidden = el.id !== section;
  }

  function render(view) {
    const before = state.view;
    state.view = view;
    state.clockAt = performance.now();
    $("study-name").textContent = view.study_name || "Study";
    document.title = view.study_name || "Study";
    const stage = STAGES.includes(view.stage) ? view.stage : "lobby";
    const section = SECTIONS[stage];
    const moved = !before || before.stage !== view.stage;
    show(section);
    if (stage === "consent") drawConsent(view);
    else if (stage === "pre_survey" || stage === "post_survey") drawSurvey(view);
    else if (stage === "lobby") drawLobby(view);
    else if (stage === "room") drawRoom(view, moved);
    else if (stage === "exit") drawExit(view);
    drawHoneypot(view);
    const withdrawn = stage === "exit" && view.exit && view.exit.status === "withdrawn";
    $("withdraw-box").hidden = stage === "consent" || withdrawn;
    drawAttention(view);
    if (moved && before) {
      // A new stage: its heading is where the keyboard and a screen reader go next.
      const heading = document.querySelector("#" + section + " h2");
      if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: stage === "room" }); }
    }
    if (stage === "exit" && state.source) { state.source.close(); state.source = null; }
    tick();
  }

  function drawConsent(view) {
    if (state.rendered.consent === view.consent) return;
    state.rendered.consent = view.consent;
    $("consent-text").textContent = view.consent || "";
  }

  function drawSurvey(view) {
    const key = view.stage + JSON.stringify(view.questions);
    if (state.rendered.survey !== key) {
      state.rendered.survey = key;
      state.rendered.feedback = null;
      state.surveyPasted = {};
      $("survey-title").textContent = view.stage === "pre_survey" ? "Before the conversation" : "A few last questions";
      $("survey-intro").textContent = INTROS[view.stage];
      $("survey-error").textContent = "";
      const box = $("questions");
      box.replaceChildren();
      view.questions.forEach((q, i) => box.appendChild(question(q, i)));
    }
    showAsked();
    drawFeedback(view);
  }

  // A question with show_if is asked only when the earlier answers meet its condition: the
  // same rule as the server's (ShowIfIn.holds, conversation/study/definition/checks.py), which
  // drops the answer of a question it does not ask.
  function same(a, b) { return a === b; }

  function holds(condition, known) {
    if (condition.all) return condition.all.every((c) => holds(c, known));
    if (condition.any) return condition.any.some((c) => holds(c, known));
    const answer = known[condition.question];
    if (answer === undefined || answer === null) return false;
    const value = condition.value;
    switch (condition.op || "==") {
      case "==": return same(answer, value);
      case "!=": return !same(answer, value);
      case "in": return value.some((v) => same(answer, v));
      case "not_in": return !value.some((v) => same(answer, v));
    }
    if (typeof answer !== "number" || typeof value !== "number") return false;
    if (condition.op === "<") return answer < value;
    if (condition.op === "<=") return answer <= value;
    if (condition.op === ">") return answer > value;
    return answer >= value;
  }

  function answerOf(q, i) {
    const id = "q" + i;
    const kind = q.question_type || "free_text";
    if (kind === "multiple_choice" || kind === "linear_scale") {
      const picked = document.querySelector('input[name="' + id + '"]:checked');
      return picked ? q.question_options[Number(picked.dataset.index)] : null;
    }
    const area = $(id);
    const text = area ? area.value.trim() : "";
    return text || null;
  }

  // Which questions are asked, in order, given the earlier surveys' answers and this one's.
  function asked() {
    const view = state.view;
    const known = Object.assign({}, view.earlier_answers || {});
    const shown = [];
    (view.questions || []).forEach((q, i) => {
      if (q.show_if && !holds(q.show_if, known)) return;
      shown.push(i);
      const value = answerOf(q, i);
      if (value !== null) known[q.question_name] = value;
    });
    return shown;
  }

  function showAsked() {
    const shown = new Set(asked());
    document.querySelectorAll("#questions > .question").forEach((el, i) => { el.hidden = !shown.has(i); });
  }

  function drawFeedback(view) {
    const feedback = view.check_feedback || [];
    const key = JSON.stringify(feedback);
    if (state.rendered.feedback === key) return;
    state.rendered.feedback = key;
    const byName = new Map(feedback.map((f) => [f.question_name, f]));
    let first = null;
    (view.questions || []).forEach((q, i) => {
      const line = $("q" + i + "-feedback");
      const f = byName.get(q.question_name);
      let text = "";
      if (f) {
        const tries = f.attempts_left === 1 ? "1 try left" : f.attempts_left + " tries left";
        text = "Not quite. " + (f.explanation ? f.explanation + " " : "") + "(" + tries + ")";
        if (first === null) first = i;
      }
      if (line.textContent !== text) line.textContent = text;
    });
    if (first !== null) {
      $("survey-error").textContent = "Some answers are not right yet: read the notes under them and try again.";
      const target = document.querySelector('input[name="q' + first + '"], #q' + first);
      if (target) target.focus();
    }
  }

  function question(q, index) {
    const id = "q" + index;
    const kind = q.question_type || "free_text";
    const note = document.createElement("p");
    note.className = "check-feedback";
    note.id = id + "-feedback";
    if (kind === "multiple_choice" || kind === "linear_scale") {
      const set = document.createElement("fieldset");
      set.className = "question" + (kind === "linear_scale" ? " scale" : "");
      set.dataset.name = q.question_name;
      set.setAttribute("aria-describedby", note.id);
      const legend = document.createElement("legend");
      legend.textContent = q.question_text || "";
      set.appendChild(legend);
      const labels = q.option_labels || {};
      (q.question_options || []).forEach((option, j) => {
        const label = document.createElement("label");
        const input = document.createElement("input");
        input.type = "radio";
        input.name = id;
        input.id = id + "-" + j;
        input.dataset.index = String(j);
        label.appendChild(input);
        const extra = kind === "linear_scale" ? labels[String(option)] : null;
        label.appendChild(document.createTextNode(" " + String(option) + (extra ? " (" + extra + ")" : "")));
        set.appendChild(label);
      });
      set.appendChild(note);
      return set;
    }
    const wrap = document.createElement("div");
    wrap.className = "question";
    wrap.dataset.name = q.question_name;
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = q.question_text || "";
    const area = document.createElement("textarea");
    area.id = id;
    area.rows = 3;
    area.maxLength = 5000;
    area.setAttribute("aria-describedby", note.id);
    area.dataset.name = q.question_name;
    wrap.append(label, area, note);
    return wrap;
  }

  function answers() {
    const found = {};
    const missing = [];
    for (const i of asked()) {  // a question not asked is not answered
      const q = state.view.questions[i];
      const value = answerOf(q, i);
      if (value === null) missing.push({ q, id: "q" + i });
      else found[q.question_name] = value;
    }
    return { found, missing };
  }

  function drawLobby(view) {
    const more = view.waiting_for;
    const line = more ? "Waiting for " + more + " more " + (more === 1 ? "person" : "people") + "…" : "Forming your group…";
    if ($("lobby-status").textContent !== line) $("lobby-status").textContent = line;
  }

  function drawRoom(view, moved) {
    $("seat").textContent = "You are " + (view.seat || "a participant");
    const instructions = view.instructions || "";
    $("instructions").hidden = !instructions;
    $("instructions-text").textContent = instructions;
    if ($("notice").textContent !== (view.notice || "")) $("notice").textContent = view.notice || "";
    const researcher = (view.help || []).filter((h) => h.from_researcher);
    const box = $("researcher");
    if (box.childElementCount !== researcher.length) {
      box.replaceChildren();
      for (const item of researcher) {
        const p = document.createElement("p");
        p.className = "from-researcher";
        p.textContent = "Message from the researcher: " + item.text;
        box.appendChild(p);
      }
    }
    $("message-label").textContent = "Your message" + (view.your_turn ? " (it is your turn)" : "");
    $("message").maxLength = view.max_message_chars || 10000;
    drawLimits(view.limits);
    if (moved) {
      state.messages.clear();
      state.drafts.clear();
      $("messages").replaceChildren();
      $("empty").hidden = false;
      requestAnimationFrame(() => toBottom());
    }
  }

  // The room's rules for the person: the turn banner, the box closed (and why), the messages
  // still needed or allowed. The wait before leaving is counted down by tick().
  function drawLimits(limits) {
    limits = limits || {};
    const banner = limits.turn_banner || "";
    const turn = $("turn");
    if (turn.textContent !== banner) turn.textContent = banner;
    turn.classList.toggle("mine", banner !== "" && !banner.startsWith("Waiting"));
    const closed = limits.closed_reason || "";
    const box = $("message");
    if (closed && !box.disabled) state.boxHadFocus = document.activeElement === box;
    box.disabled = !!closed;
    $("send").disabled = !!closed;
    if ($("composer-closed").textContent !== closed) $("composer-closed").textContent = closed;
    if (!closed && state.boxHadFocus) {
      // Given back to the keyboard when it is the person's turn again (unless they moved on).
      state.boxHadFocus = false;
      if (!document.activeElement || document.activeElement === document.body) box.focus();
    }
    const parts = [];
    const needed = limits.messages_needed || 0;
    if (needed) parts.push("Send at least " + needed + " more message" + (needed === 1 ? "" : "s") + " before you can leave.");
    const left = limits.messages_left;
    if (left !== null && left !== undefined && left > 0) parts.push("You can send " + left + " more message" + (left === 1 ? "" : "s") + ".");
    const line = parts.join(" ");
    if ($("rules-line").textContent !== line) $("rules-line").textContent = line;
  }

  // Whether the person may leave now, and what the leave button's hint says.
  function leaveState() {
    const view = state.view;
    const limits = view.limits || {};
    const wait = view.leave_in === null || view.leave_in === undefined ? 0 : Math.max(0, view.leave_in - (performance.now() - state.clockAt) / 1000);
    if (wait > 0) return { ok: false, hint: "You can leave in " + clock(wait) + "." };
    const needed = limits.messages_needed || 0;
    if (needed) return { ok: false, hint: "" };  // the rules line says how many
    return { ok: true, hint: "" };
  }

  function clock(seconds) {
    const whole = Math.max(0, Math.ceil(seconds));  // never "0:00" while it still waits
    return Math.floor(whole / 60) + ":" + String(whole % 60).padStart(2, "0");
  }

  function drawLeave() {
    const { ok, hint } = leaveState();
    const button = $("leave");
    if (button.disabled === ok) button.disabled = !ok;
    const line = $("leave-hint");
    if (!line.dataset.error && line.textContent !== hint) line.textContent = hint;
  }

  async function leave() {
    const yes = await ask({
      title: "Leave the conversation?",
      text: "You cannot come back to it. The others may go on without you.",
      confirm: "Leave the conversation",
    });
    if (!yes) return;
    const answer = await call("/study/api/leave", {});
    const line = $("leave-hint");
    if (answer.ok) { delete line.dataset.error; return; }
    line.dataset.error = "1";
    line.textContent = "Not yet: " + (answer.body.error || "try again.");
    setTimeout(() => { delete line.dataset.error; drawLeave(); }, 5000);
  }

  // -- the attention check: a modal dialog (focus stays in it; the keyboard answers it) ----

  function drawAttention(view) {
    const dialog = $("attention");
    const check = view.stage === "room" ? view.attention : null;
    if (!check) {
      if (dialog.open) dialog.close();
      state.attentionId = null;
      return;
    }
    if (state.attentionId === check.check_id && dialog.open) return;
    state.attentionId = check.check_id;
    $("attention-question").textContent = check.question_text;
    const set = $("attention-choices");
    for (const old of set.querySelectorAll("label")) old.remove();
    check.question_options.forEach((option, j) => {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "radio";
      input.name = "attention-choice";
      input.value = option;
      input.id = "attention-" + j;
      label.append(input, document.createTextNode(" " + option));
      set.appendChild(label);
    });
    $("attention-error").textContent = "";
    $("attention-send").disabled = false;
    if ($("confirm").open) $("confirm").close();
    state.attentionOpener = document.activeElement;
    if (!dialog.open) dialog.showModal();
    const first = set.querySelector("input");
    if (first) first.focus();
    tick();
  }

  async function answerAttention(event) {
    event.preventDefault();
    const picked = document.querySelector('input[name="attention-choice"]:checked');
    if (!picked) { $("attention-error").textContent = "Choose one of the answers."; return; }
    const answer = await call("/study/api/attention", { check_id: state.attentionId, answer: picked.value });
    if (answer.ok || answer.status === 409) {
      $("attention").close();
      if (answer.status === 409) $("notice").textContent = answer.body.error || "";
      const back = state.attentionOpener;
      if (back && document.contains(back) && !back.disabled) back.focus();
      return;
    }
    $("attention-error").textContent = answer.body.error || "Not sent: try again.";
  }

  // A modal dialog keeps the keyboard: Tab from its last stop goes to its first, Shift+Tab
  // from its first to its last (a radio group is one stop, as the browser treats it).
  function trapFocus(dialog) {
    dialog.addEventListener("keydown", (event) => {
      if (event.key !== "Tab") return;
      const stops = [];
      for (const el of dialog.querySelectorAll("button, input, textarea, select, a[href], [tabindex]")) {
        if (el.disabled || el.tabIndex < 0 || el.closest("[hidden]")) continue;
        if (el.type === "radio") {
          const group = [...dialog.querySelectorAll('input[type="radio"]')].filter((r) => r.name === el.name);
          const stop = group.find((r) => r.checked) || group[0];
          if (stop !== el) continue;
        }
        stops.push(el);
      }
      if (!stops.length) return;
      const here = document.activeElement;
      const same = (stop) => stop === here || (stop.type === "radio" && here.type === "radio" && stop.name === here.name);
      const first = stops[0];
      const last = stops[stops.length - 1];
      if (event.shiftKey && (same(first) || !dialog.contains(here))) { event.preventDefault(); last.focus(); }
      else if (!event.shiftKey && (same(last) || !dialog.contains(here))) { event.preventDefault(); first.focus(); }
    });
  }

  // -- a question before an act that cannot be undone (leave, withdraw) --------------------

  function ask({ title, text, confirm, danger }) {
    const dialog = $("confirm");
    const opener = document.activeElement;
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    const yes = $("confirm-yes");
    yes.textContent = confirm;
    yes.className = danger ? "danger" : "primary";
    return new Promise((resolve) => {
      const done = (value) => {
        yes.onclick = $("confirm-no").onclick = dialog.onclose = null;
        if (dialog.open) dialog.close();
        if (opener && document.contains(opener) && !opener.disabled) opener.focus();
        resolve(value);
      };
      yes.onclick = () => done(true);
      $("confirm-no").onclick = () => done(false);
      dialog.onclose = () => done(false);  // Escape
      dialog.showModal();
      $("confirm-no").focus();  // the safe choice first
    });
  }

  async function withdraw() {
    const yes = await ask({
      title: "Withdraw from the study?",
      text: "If you withdraw, your messages are taken out of the conversation's record (they read \"[withdrawn]\" or are removed), " +
        "and your survey answers, your Prolific ID, your messages to the researcher and the records of how you wrote are deleted. " +
        "Only a note that someone withdrew, and when, is kept. This cannot be undone.",
      confirm: "Withdraw and delete my data",
      danger: true,
    });
    if (!yes) return;
    const answer = await call("/study/api/withdraw", { confirm: true });
    if (!answer.ok) { $("withdraw-error").textContent = "Not done: " + (answer.body.error || "try again."); return; }
    $("withdraw-error").textContent = "";
    // The exit for withdrawn (the stream may be closed already, at an exit page).
    try {
      const response = await fetch("/study/api/view?p=" + encodeURIComponent(state.token), { cache: "no-store", credentials: "omit" });
      if (response.ok) render(await response.json());
    } catch (error) { /* the stream brings it */ }
  }

  function drawHoneypot(view) {
    // An instruction only automation reads (docs/participant-page.md): out of sight, out of
    // the accessibility tree, nothing in it to focus.
    for (const id of ["honeypot-survey", "honeypot-room"]) {
      const el = $(id);
      el.hidden = !view.honeypot;
      if (el.textContent !== (view.honeypot || "")) el.textContent = view.honeypot || "";
    }
  }

  function money(amount, currency) {
    try {
      return new Intl.NumberFormat("en-GB", { style: "currency", currency }).format(Number(amount));
    } catch (error) {
      return (currency ? currency + " " : "") + amount;
    }
  }

  function drawEarnings(earnings) {
    $("earnings").hidden = !earnings;
    if (!earnings) return;
    const list = $("earnings-lines");
    list.replaceChildren();
    for (const line of earnings.lines || []) {
      const dt = document.createElement("dt");
      dt.textContent = line.label;
      const dd = document.createElement("dd");
      // null: a bonus whose answer is not known yet (an analysis run after the study)
      dd.textContent = line.amount === null || line.amount === undefined ? "to be confirmed" : money(line.amount, earnings.currency);
      list.append(dt, dd);
    }
    $("earnings-total").textContent = earnings.total === null || earnings.total === undefined ? "" : "Total: " + money(earnings.total, earnings.currency);
  }

  function drawExit(view) {
    const info = view.exit || {};
    $("exit-text").textContent = info.text || "Thank you.";
    $("code-box").hidden = !info.code;
    $("code").value = info.code || "";
    const link = $("continue");
    const target = info.redirect || "";
    const safe = /^https?:\/\//i.test(target);
    link.hidden = !safe;
    if (safe) link.href = target; else link.removeAttribute("href");
    $("exit-help").textContent = safe ? "Copy this code into Prolific, or press Continue." : "Copy this code into Prolific.";
    drawEarnings(info.earnings || null);
  }

  // -- the chat ----------------------------------------------------------------------------

  function atBottom() {
    const chat = $("chat");
    return chat.scrollHeight - chat.scrollTop - chat.clientHeight < 48;
  }

  function toBottom() {
    const chat = $("chat");
    chat.scrollTop = chat.scrollHeight;
    state.follow = true;
    $("newer").hidden = true;
    // On a phone the page itself scrolls too: the newest message and the box stay in view.
    const composer = $("composer");
    if (composer.getBoundingClientRect().bottom > window.innerHeight) composer.scrollIntoView({ block: "end" });
  }

  function bubble(message, li) {
    li = li || document.createElement("li");
    li.replaceChildren();
    li.dataset.seq = String(message.seq);
    li.className = "message " + (message.kind === "system" ? "system" : message.own ? "own" : "other");
    if (message.kind === "system") {
      li.textContent = message.content;
      return li;
    }
    const who = document.createElement("span");
    who.className = "who";
    who.textContent = message.speaker + (message.own ? " (you)" : "") + (message.private ? " · private" : "");
    const colon = document.createElement("span");
    colon.className = "visually-hidden";
    colon.textContent = ": ";
    const body = document.createElement("p");
    body.className = "body";
    body.textContent = message.content;
    li.append(who, colon, body);
    return li;
  }

  function place(li, seq) {
    const list = $("messages");
    let after = null;
    for (const [other, el] of state.messages) if (other > seq && (!after || Number(after.dataset.seq) > other)) after = el;
    list.insertBefore(li, after);
  }

  function addMessage(message) {
    if (state.messages.has(message.seq)) return;
    const follow = state.follow;
    const draft = state.drafts.get(message.seq);
    let li;
    if (draft) {
      // The streamed reply is complete: its text is final now, announced once.
      li = bubble(message, draft);
      li.removeAttribute("aria-busy");
      state.drafts.delete(message.seq);
    } else {
      li = bubble(message);
      place(li, message.seq);
    }
    state.messages.set(message.seq, li);
    $("empty").hidden = true;
    if (follow || message.own) toBottom();
    else $("newer").hidden = false;
  }

  function setDraft(draft) {
    if (state.messages.has(draft.seq)) return;
    let li = state.drafts.get(draft.seq);
    const follow = state.follow;
    if (!li) {
      li = document.createElement("li");
      li.setAttribute("aria-busy", "true");  // read once, when it is complete
      state.drafts.set(draft.seq, li);
      li.dataset.seq = String(draft.seq);
      $("messages").appendChild(li);
      $("empty").hidden = true;
    }
    if (draft.text === null) {  // the draft was dropped (stopped, failed): it goes away
      li.remove();
      state.drafts.delete(draft.seq);
      return;
    }
    bubble({ seq: draft.seq, speaker: draft.speaker, content: draft.text, kind: "agent", own: false, private: false }, li);
    li.classList.add("draft");
    if (follow) toBottom(); else $("newer").hidden = false;
  }

  function setTyping(names) {
    let line = "";
    if (names.length === 1) line = names[0] + " is typing…";
    else if (names.length > 1) line = names.slice(0, -1).join(", ") + " and " + names[names.length - 1] + " are typing…";
    if ($("typing").textContent !== line) $("typing").textContent = line;
  }

  function newRequestId() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // Signals (issue 34), never shown to the person: characters pasted and typed into the box,
  // how often the page lost focus while a message was being written, and for how long it was
  // written (first keystroke or paste to send). The reply latency is measured by the server.
  function messageSignals() {
    const c = state.compose;
    const signals = { pasted_chars: c.pasted, typed_chars: c.typed, focus_lost: c.focusLost };
    if (c.start !== null) signals.compose_ms = Math.max(0, Math.round(performance.now() - c.start));
    return signals;
  }

  function composing(event) {
    const c = state.compose;
    if (c.start === null) c.start = performance.now();
    if (event.type === "paste") {
      const text = event.clipboardData ? event.clipboardData.getData("text") : "";
      c.pasted += text.length;
    } else if (event.inputType && event.inputType.startsWith("insert") && event.inputType !== "insertFromPaste" && event.inputType !== "insertFromDrop") {
      c.typed += event.inputType === "insertLineBreak" ? 1 : (event.data || "").length;
    }
  }

  async function send() {
    const box = $("message");
    const text = box.value;
    if (state.sending) return;
    if (!text.trim()) { $("composer-error").textContent = "Write a message first."; return; }
    // The same text sent again (a retry, a double press) keeps its request id: one message.
    if (state.requestText !== text) { state.requestId = newRequestId(); state.requestText = text; }
    state.sending = true;
    const body = { text, request_id: state.requestId };
    if (state.view.record_signals) body.signals = messageSignals();
    const answer = await call("/study/api/post", body);
    state.sending = false;
    if (answer.ok) {
      $("composer-error").textContent = "";
      if (box.value === text) { box.value = ""; state.compose = freshCompose(); }
      state.requestId = state.requestText = null;
      addMessage({ seq: answer.body.seq, speaker: state.view.seat || "", content: text, kind: "human", own: true, private: false });
      return;
    }
    // Refused: the text stays in the box, with the reason.
    const reason = answer.body.error || "Not sent.";
    $("composer-error").textContent = answer.status === 0 || answer.status === 503 ? "Not sent yet. " + reason + " Send it again in a moment." : "Not sent: " + reason;
  }

  // -- the clock on the page ---------------------------------------------------------------

  function tick() {
    const view = state.view;
    if (!view) return;
    const gone = (performance.now() - state.clockAt) / 1000;
    if (view.stage === "room" && view.time_left !== null && view.time_left !== undefined) {
      const left = Math.max(0, Math.floor(view.time_left - gone));
      const line = "Time left: " + Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
      if ($("time-left").textContent !== line) $("time-left").textContent = line;
    }
    if (view.stage === "room") drawLeave();
    if (view.stage === "room" && view.attention && view.attention_seconds_left !== null && view.attention_seconds_left !== undefined) {
      const left = Math.max(0, view.attention_seconds_left - gone);
      const line = left > 0 ? "Time left to answer: " + clock(left) : "The time to answer is over.";
      if ($("attention-time").textContent !== line) $("attention-time").textContent = line;
      $("attention-send").disabled = left <= 0;
    }
    if (view.stage === "lobby" && view.lobby_seconds_left !== null && view.lobby_seconds_left !== undefined) {
      const left = Math.max(0, Math.floor(view.lobby_seconds_left - gone));
      $("lobby-time").textContent = "At most " + left + " more seconds.";
    }
  }

  // -- what the person does ----------------------------------------------------------------

  function wire() {
    $("agree").addEventListener("click", () => consent(true));
    $("decline").addEventListener("click", () => consent(false));
    $("survey-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const { found, missing } = answers();
      if (missing.length) {
        $("survey-error").textContent = "Please answer every question: " + missing.map((m) => m.q.question_text).join("; ");
        const first = document.querySelector('[name="' + missing[0].id + '"], #' + missing[0].id);
        if (first) first.focus();
        return;
      }
      const body = { answers: found };
      if (state.view.record_signals) {
        const pasted = {};
        for (const [name, count] of Object.entries(state.surveyPasted)) if (name in found && count > 0) pasted[name] = count;
        body.signals = { pasted };
      }
      const answer = await call("/study/api/survey", body);
      if (!answer.ok && answer.status !== 409) $("survey-error").textContent = answer.body.error || "Not sent.";
    });
    $("survey-form").addEventListener("change", showAsked);
    $("survey-form").addEventListener("input", showAsked);
    $("questions").addEventListener("paste", (event) => {
      const name = event.target && event.target.dataset ? event.target.dataset.name : null;
      if (!name) return;
      const text = event.clipboardData ? event.clipboardData.getData("text") : "";
      state.surveyPasted[name] = (state.surveyPasted[name] || 0) + text.length;
    });
    $("message").addEventListener("input", composing);
    $("message").addEventListener("paste", composing);
    window.addEventListener("blur", () => {
      // Focus lost while a message is being written (another tab, another window).
      if (state.compose.start !== null && $("message").value) state.compose.focusLost += 1;
    });
    $("leave").addEventListener("click", leave);
    $("withdraw").addEventListener("click", withdraw);
    $("attention-form").addEventListener("submit", answerAttention);
    // The attention check is answered, not dismissed: Escape does not close it.
    $("attention").addEventListener("cancel", (event) => event.preventDefault());
    trapFocus($("attention"));
    trapFocus($("confirm"));
    $("composer").addEventListener("submit", (event) => { event.preventDefault(); send(); });
    $("message").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); send(); }
    });
    $("chat").addEventListener("scroll", () => {
      state.follow = atBottom();
      if (state.follow) $("newer").hidden = true;
    });
    if (window.ResizeObserver) {
      // The chat's size or content changed (a line above it came or went, a message wrapped):
      // one that showed its newest message still does.
      const keep = new ResizeObserver(() => { if (state.follow) $("chat").scrollTop = $("chat").scrollHeight; });
      keep.observe($("chat"));
      keep.observe($("messages"));
    }
    $("newer").addEventListener("click", () => { toBottom(); $("message").focus(); });
    $("help-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      const area = $("help-text");
      const text = area.value.trim();
      if (!text) { $("help-status").textContent = "Write your message to the researcher first."; return; }
      const answer = await call("/study/api/help", { text });
      if (answer.ok) { area.value = ""; $("help-status").textContent = "Sent. The researcher's answers appear above the chat."; }
      else $("help-status").textContent = "Not sent: " + (answer.body.error || "try again.");
    });
    $("copy").addEventListener("click", copyCode);
    if (window.visualViewport) {
      // A phone's keyboard opening shrinks the view: keep the newest message in sight.
      window.visualViewport.addEventListener("resize", () => { if (state.follow && state.view && state.view.stage === "room") toBottom(); });
    }
    setInterval(tick, 1000);
  }

  async function consent(agree) {
    const answer = await call("/study/api/consent", { agree });
    if (!answer.ok && answer.status !== 409) $("consent-error").textContent = answer.body.error || "Not sent.";
  }

  async function copyCode() {
    const field = $("code");
    let done = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(field.value);
        done = true;
      }
    } catch (error) { done = false; }
    if (!done) {
      // A page served without HTTPS has no clipboard API: select the code and copy it.
      field.focus();
      field.setSelectionRange(0, field.value.length);
      try { done = document.execCommand("copy"); } catch (error) { done = false; }
    }
    $("copy-status").textContent = done ? "Copied." : "Select the code and copy it.";
  }

  wire();
  if (params.has("room")) {
    // A link with a room's id: the page never opens a room by id, only the person's own.
    $("link-notice").textContent = "A study link cannot open a room: you only see your own conversation.";
  }
  if (state.token) listen(); else join();
})();
