// The player: draws the frames a session streams, sends keys, prompts, choices and speech (play/PROTOCOL.md).
// Inputs carry increasing sequence numbers kept across reloads; any not yet accepted are sent again after a
// reconnect, and the platform ignores the duplicates, so nothing typed or pressed is lost or applied twice.
(() => {
  "use strict";
  const root = document.getElementById("player");
  if (!root) return;
  const sessionId = root.dataset.session;
  const live = root.dataset.live === "true";
  const canvas = root.querySelector("canvas"); // absent in a conversation with a character
  const context = canvas ? canvas.getContext("2d") : null;
  // The picture takes the engine's shape (the page states its frame size) before the first frame is drawn.
  if (canvas) canvas.parentElement.style.aspectRatio = `${canvas.width} / ${canvas.height}`;
  const debugPanel = root.querySelector(".player-debug");
  const speaking = new Map(); // character -> the log line their reply is streaming into
  const stateLine = root.querySelector(".player-state"); // a live region: changes only with the state
  const detailLine = root.querySelector(".player-detail"); // frames a second, latency, a countdown: not announced
  const log = root.querySelector(".player-log");
  const subtitle = root.querySelector(".player-subtitle"); // the latest line of the log, over the picture
  const choiceBar = root.querySelector(".player-choices"); // absent in a conversation
  const sequenceKey = `worldloom.sequence.${sessionId}`;
  // The protocol's constants, from the server's definitions (play/protocol.py PAGE_CONSTANTS).
  const protocol = JSON.parse(document.getElementById("play-protocol").textContent);
  const keyNames = new Set(protocol.keys);
  const states = protocol.states; // a session's states as `welcome` and `status` name them
  const keyAliases = { ArrowUp: "KeyW", ArrowDown: "KeyS" };

  // This page's own name for the platform: `seq` is checked for resends per page, so another tab of the same
  // player counting from 1 too is not taken for a resend. Kept in memory only: the inputs a reconnect resends
  // (`unconfirmed`) are lost with the page anyway, and a duplicated tab must not share it.
  const browserId = Array.from(crypto.getRandomValues(new Uint8Array(16)), (byte) => byte.toString(16).padStart(2, "0")).join("");

  let socket = null;
  let sequence = Number(sessionStorage.getItem(sequenceKey) || 0);
  const unconfirmed = new Map(); // client sequence -> message, until the platform has logged it
  const awaitingFrame = new Map(); // session sequence -> time sent, to measure input-to-frame latency
  const held = new Set();
  let state = "connecting";
  let endReason = "";
  let queue = null; // while queued: { place, reason } or { place, until } (when the estimate runs out)
  let framesDrawn = 0;
  let framesSeen = 0;
  let jpegAcknowledged = 0; // the newest JPEG frame this connection acknowledged
  let framesPerSecond = null; // null until a second with frames was counted (none yet: not a stall)
  let latency = null;
  let backoff = 500;
  let drawing = false;
  // A beat's scene arrives at once and its choices a moment later, once the model has written them. Between
  // the two the page says so where the choices will be. Waiting: at the start of a story, and after a choice.
  let awaitingChoices = root.dataset.story === "true";
  let offered = false; // choices are on screen
  let storyEnded = false;
  let paused = false;
  // Characters writing a reply: from the moment the platform accepts what was said to them until their first
  // line arrives. `repliesBySequence` finds the character again when the worker could not apply the speech.
  const replying = new Set();
  const repliesBySequence = new Map();

  // What the status line says, first match wins: the state of the connection and the session, then what
  // the story is doing. Every word of it is something the page knows, never a guess.
  function stateText() {
    if (state === "connecting") return "Connecting…";
    if (state === states.reconnecting) return "Connection lost: reconnecting…";
    if (state === states.ended) return endReason ? `The session ended: ${endReason}` : "The session has ended.";
    if (state === states.parked) return "Waking the world up…";
    if (state === states.queued) {
      if (!queue) return "In the queue…";
      return queue.reason ? `Place ${queue.place} in the queue: ${queue.reason}` : `Place ${queue.place} in the queue`;
    }
    if (paused) return "Paused";
    if (replying.size) return `${[...replying].join(" and ")} ${replying.size > 1 ? "are" : "is"} thinking…`;
    if (awaitingChoices) return "The story is thinking…";
    if (canvas && !framesDrawn) return "Waiting for the first picture…";
    if (offered) return live ? "Vote for what happens next" : "Choose what happens next";
    if (storyEnded) return "The story has ended.";
    return canvas ? "Playing" : "Connected";
  }

  function detailText() {
    if (state === states.queued && queue && queue.until !== undefined) {
      const left = Math.round((queue.until - performance.now()) / 1000);
      return left > 0 ? `· about ${left < 90 ? `${left} s` : `${Math.round(left / 60)} min`} left` : "· any moment now";
    }
    if (state !== states.running || !canvas) return ""; // a conversation draws no frames
    const rate = framesPerSecond === null ? "" : `· ${framesPerSecond} fps`;
    return `${rate}${latency === null ? "" : ` · ${Math.round(latency)} ms`}`;
  }

  function showStatus() {
    const text = stateText();
    if (stateLine.textContent !== text) stateLine.textContent = text; // a live region: only real changes
    detailLine.textContent = detailText();
    root.dataset.state = state;
    // Until the first picture, or when there is none to show, the status stands in the middle of the stage.
    root.classList.toggle("player-waiting", state !== states.running || (canvas !== null && !framesDrawn));
  }
  setInterval(() => {
    if (framesSeen > 0 || framesPerSecond !== null) framesPerSecond = framesSeen;
    framesSeen = 0;
    showStatus();
  }, 1000);

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/play/${sessionId}/?browser=${browserId}`);
    socket.binaryType = "arraybuffer";
    socket.addEventListener("open", () => {
      backoff = 500;
      framesPerSecond = null; // a new connection: its rate is counted afresh
      jpegAcknowledged = 0; // and its flow control starts afresh
      for (const message of unconfirmed.values()) socket.send(JSON.stringify(message));
    });
    socket.addEventListener("message", (event) => {
      if (event.data instanceof ArrayBuffer) frame(event.data);
      else handle(JSON.parse(event.data));
    });
    socket.addEventListener("close", (event) => {
      if (state === states.ended) return;
      // The sign-in ended (log-out, password change, suspension); reconnecting would only be refused.
      if (event.code === protocol.close_signed_out) {
        location.assign(`/accounts/login/?next=${encodeURIComponent(location.pathname)}`);
        return;
      }
      state = states.reconnecting;
      showStatus();
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    });
  }

  function frame(buffer) {
    const header = new DataView(buffer, 0, protocol.frame_header_bytes);
    const number = header.getUint32(0);
    const applied = header.getUint32(4);
    const codec = protocol.frame_codecs[header.getUint8(8)];
    const key = (header.getUint8(9) & protocol.key_frame_flag) !== 0;
    // A JPEG is acknowledged as it arrives (a newer one replaces it); a video frame once it is decoded and
    // drawn, so that a decoder falling behind counts as lagging and the platform skips it to a key frame.
    if (codec === "jpeg" || !context) acknowledgeJpeg(number);
    framesSeen += 1;
    const now = performance.now();
    for (const [sent, at] of awaitingFrame) {
      if (sent <= applied) { latency = now - at; awaitingFrame.delete(sent); }
    }
    if (!context) return;
    const picture = buffer.slice(protocol.frame_header_bytes);
    if (codec === "jpeg") drawJpeg(number, picture);
    else decodeVideo(codec, key, number, picture);
  }

  function acknowledge(number) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "ack", frame: number }));
  }

  // Every other frame: the platform keeps twice as many frame numbers in flight, so the next one always comes.
  function acknowledgeJpeg(number) {
    if (number < jpegAcknowledged + protocol.jpeg_ack_ticks) return;
    jpegAcknowledged = number;
    acknowledge(number);
  }

  function drawJpeg(number, picture) {
    if (drawing) return; // a newer frame will follow; never queue decodes behind a slow one
    drawing = true;
    createImageBitmap(new Blob([picture], { type: "image/jpeg" }))
      .then((bitmap) => {
        context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
        canvas.dataset.frame = String(number);
        bitmap.close();
        pictureDrawn();
      })
      .finally(() => { drawing = false; });
  }

  // Video (H.264 or VP8) through WebCodecs. Unlike a JPEG, no delta frame may be left out, however slow the
  // decoder: each one builds on the picture before it, and one missing garbles the picture until the next key
  // frame. The platform starts a stream, and restarts one a browser fell behind on, at a key frame.
  let decoder = null; // a VideoDecoder, configured for `decoderCodec`; null until a key frame arrives
  let decoderCodec = null;
  let framesDecoded = 0;
  let videoRefused = false;
  function decodeVideo(codec, key, number, picture) {
    if (!decoder || decoder.state === "closed" || decoderCodec !== codec) {
      if (!key) return; // nothing to decode a delta from: the next key frame starts the picture
      if (!("VideoDecoder" in window)) {
        // WebCodecs exists only on secure pages: a platform served over plain HTTP, away from localhost, has none.
        const why = window.isSecureContext
          ? "this browser has no WebCodecs"
          : "video plays only on a secure page: HTTPS, or localhost";
        if (!videoRefused) say(`⚠ This world streams video, which this page cannot decode (${why}).`, "player-error");
        videoRefused = true;
        return;
      }
      decoder = new VideoDecoder({
        output: drawVideo,
        // A broken packet closes the decoder: the next key frame opens a new one.
        error: (error) => { console.warn("video decoder:", error); decoder = null; },
      });
      decoder.configure({ codec: protocol.webcodecs_codecs[codec], optimizeForLatency: true });
      decoderCodec = codec;
    }
    decoder.decode(new EncodedVideoChunk({ type: key ? "key" : "delta", timestamp: number, data: picture }));
  }

  function drawVideo(videoFrame) {
    if (canvas.width !== videoFrame.displayWidth || canvas.height !== videoFrame.displayHeight) {
      canvas.width = videoFrame.displayWidth; // drawn at the stream's own size, and the stage takes its shape
      canvas.height = videoFrame.displayHeight;
      canvas.parentElement.style.aspectRatio = `${canvas.width} / ${canvas.height}`;
    }
    context.drawImage(videoFrame, 0, 0, canvas.width, canvas.height);
    canvas.dataset.frame = String(videoFrame.timestamp); // the frame number it was decoded from
    acknowledge(videoFrame.timestamp);
    videoFrame.close();
    framesDecoded += 1;
    canvas.dataset.decoded = String(framesDecoded); // for tests and the curious: pictures decoded so far
    pictureDrawn();
  }

  function pictureDrawn() {
    framesDrawn += 1;
    if (framesDrawn === 1) showStatus();
  }

  function handle(message) {
    switch (message.type) {
      case "welcome":
        state = message.status;
        if (state !== states.queued) queue = null;
        break;
      case "status":
        state = message.state;
        queue = null;
        if (message.state === states.queued) {
          // No estimate while no worker runs this world's engine: the platform says so instead of guessing.
          queue = message.estimated_wait_s === undefined
            ? { place: message.queue_place, reason: message.reason }
            : { place: message.queue_place, until: performance.now() + message.estimated_wait_s * 1000 };
        }
        if (message.state === states.ended) {
          endReason = message.reason || "";
          say(endReason ? `The session ended: ${endReason}` : "The session ended.");
        }
        break;
      case "accepted": {
        const sent = unconfirmed.get(message.seq);
        unconfirmed.delete(message.seq);
        if (sent && !message.duplicate) {
          awaitingFrame.set(message.sequence, performance.now());
          if (sent.type === "speech") { replying.add(sent.character); repliesBySequence.set(message.sequence, sent.character); }
        }
        break;
      }
      case "narration": {
        // Told again as the page opened (or the session reopened): the story so far the page was served holds
        // it, or it is older than the lines that page shows. It is not logged below the newer lines, where it
        // would read as just told, nor shown over the picture, where a scene told long ago reads as the story
        // starting over: the latest line of the log is where the story stands. A page with no story so far
        // logs it.
        if (message.again && log.children.length) {
          showSubtitle(log.lastElementChild);
        } else {
          say(message.text);
        }
        break;
      }
      case "choices":
        // None offered at a beat that goes on: they are still being written.
        awaitingChoices = message.choices.length === 0 && !message.ended;
        storyEnded = message.ended;
        showChoices(message.choices);
        if (storyEnded) showEnding();
        break;
      case "votes":
        if (!choiceBar) break;
        choiceBar.querySelectorAll("button").forEach((button, index) => {
          button.textContent = `${button.dataset.text} (${message.tally[index] || 0})`;
        });
        break;
      case "character_line":
        replying.delete(message.character);
        speak(message);
        break;
      case "said":
        // This page showed its own words as they were sent; another tab's, or another player's, arrive here.
        if (message.browser === browserId) break;
        say(`${message.speaker === root.dataset.viewer ? "You" : message.speaker}: ${message.text}`);
        break;
      case "debug_prompt": showPrompt(message); break;
      case "error":
        // The worker could not apply something said to a character: no reply is coming.
        if (message.sequence !== undefined && repliesBySequence.has(message.sequence)) {
          replying.delete(repliesBySequence.get(message.sequence));
        }
        say(`⚠ ${message.error}`, "player-error");
        break;
      default: break;
    }
    showStatus();
  }

  function say(text, className) {
    const item = document.createElement("li");
    item.textContent = text; // text, never markup: what workers and models write stays inert
    if (className) item.className = className;
    log.append(item);
    log.scrollTop = log.scrollHeight;
    showSubtitle(item);
    return item;
  }

  // The latest line stays over the picture long enough to read it (longer for longer lines), then goes; a
  // reply still arriving keeps it there.
  let subtitleFor = null;
  let subtitleTimer = 0;
  function showSubtitle(item) {
    if (!subtitle) return;
    subtitleFor = item;
    subtitle.textContent = item.textContent;
    subtitle.classList.toggle("player-error", item.classList.contains("player-error"));
    subtitle.hidden = false;
    clearTimeout(subtitleTimer);
    subtitleTimer = setTimeout(() => {
      if (subtitleFor === item && !item.classList.contains("player-speaking")) subtitle.hidden = true;
    }, Math.min(20000, 5000 + item.textContent.length * 60));
  }

  // A reply arrives a sentence at a time, then `final`: the sentences join one line of the log.
  function speak(message) {
    let line = speaking.get(message.character);
    if (!line && message.text) {
      line = say(`${message.character}: ${message.text}`);
      line.classList.add("player-speaking");
      speaking.set(message.character, line);
    } else if (line && message.text) {
      line.textContent += ` ${message.text}`;
      log.scrollTop = log.scrollHeight;
    }
    if (message.final && line) {
      line.classList.remove("player-speaking");
      speaking.delete(message.character);
    }
    if (line) showSubtitle(line);
  }

  // The creator's debug panel: the prompt the last reply was written from, section by section.
  function showPrompt(message) {
    if (!debugPanel) return;
    const body = debugPanel.querySelector(".player-debug-sections");
    body.replaceChildren();
    const heading = document.createElement("h3");
    heading.textContent = `Prompt for ${message.character}`;
    body.append(heading);
    for (const [title, text] of Object.entries(message.sections || {})) {
      const term = document.createElement("dt");
      term.textContent = title;
      const detail = document.createElement("dd");
      const pre = document.createElement("pre");
      pre.textContent = text; // model input is shown as text, never as markup
      detail.append(pre);
      body.append(term, detail);
    }
    debugPanel.hidden = false;
  }

  function showChoices(choices) {
    offered = choices.length > 0;
    if (!choiceBar) return;
    choiceBar.replaceChildren();
    choices.forEach((text, index) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = text;
      button.dataset.text = text;
      if (live) button.setAttribute("aria-pressed", "false");
      // In a Live world a choice is a vote, which may be changed until the vote closes.
      button.addEventListener("click", () => {
        send("choice", { index });
        if (live) {
          choiceBar.querySelectorAll("button").forEach((other) => other.setAttribute("aria-pressed", String(other === button)));
          return;
        }
        choiceBar.replaceChildren();
        offered = false;
        awaitingChoices = true;
        showStatus();
        giveKeysBack(); // the focused button is gone: the keys go back to the world
      });
      choiceBar.append(button);
    });
  }

  // Where the choices stood: the story's end, said where the player was looking for what comes next.
  function showEnding() {
    if (!choiceBar) return;
    const ending = document.createElement("p");
    ending.className = "player-ending";
    ending.append("The story has ended. ");
    const again = document.createElement("a");
    again.href = root.dataset.again;
    again.textContent = "Play it again";
    ending.append(again);
    choiceBar.replaceChildren(ending);
  }

  function send(type, fields = {}) {
    if (root.dataset.role !== "player") return;
    sequence += 1;
    sessionStorage.setItem(sequenceKey, String(sequence));
    const message = { type, seq: sequence, ...fields };
    unconfirmed.set(sequence, message);
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  function press(key) { if (!held.has(key)) { held.add(key); send("key_down", { key }); } }
  function release(key) { if (held.delete(key)) send("key_up", { key }); }

  // Keys are heard on the whole document, so they work from the moment the page loads without a click on the
  // picture; only while the player types in a field do they type. Esc leaves the field for the world.
  function typing(target) { return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement; }
  function giveKeysBack() {
    if (canvas) canvas.focus({ preventScroll: true });
    else if (typing(document.activeElement)) document.activeElement.blur();
  }
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && typing(event.target)) { giveKeysBack(); return; }
    const key = keyAliases[event.code] || event.code;
    if (!keyNames.has(key) || typing(event.target)) return;
    event.preventDefault();
    press(key);
  });
  document.addEventListener("keyup", (event) => {
    const key = keyAliases[event.code] || event.code;
    if (keyNames.has(key)) release(key);
  });
  window.addEventListener("blur", () => { for (const key of [...held]) release(key); });

  for (const button of root.querySelectorAll(".player-pad [data-key]")) {
    const key = button.dataset.key;
    button.addEventListener("pointerdown", (event) => { event.preventDefault(); press(key); });
    for (const end of ["pointerup", "pointerleave", "pointercancel"]) button.addEventListener(end, () => release(key));
  }

  const promptForm = root.querySelector(".player-prompt");
  if (promptForm) {
    const input = promptForm.querySelector("input");
    promptForm.addEventListener("submit", (event) => {
      event.preventDefault();
      if (input.value.trim()) { send("prompt", { text: input.value.trim() }); input.value = ""; }
      giveKeysBack(); // the world changes in front of the player, who can walk on at once
    });
    const pause = promptForm.querySelector(".player-pause");
    pause.addEventListener("click", () => {
      send(paused ? "resume" : "pause");
      paused = !paused;
      pause.textContent = paused ? "Resume" : "Pause";
      showStatus();
    });
  }
  const chatForm = root.querySelector(".player-chat");
  if (chatForm) {
    chatForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const text = chatForm.querySelector("#chat-text");
      if (!text.value.trim()) return;
      const character = chatForm.querySelector("[name=character]").value;
      send("speech", { character, text: text.value.trim() });
      say(`You: ${text.value.trim()}`);
      text.value = "";
      showStatus();
    });
  }

  log.scrollTop = log.scrollHeight; // the story so far the page was served ends with the latest lines
  connect();
  showStatus();
})();
