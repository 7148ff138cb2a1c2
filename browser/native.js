// Talking to readdod through its native-messaging host, and the intents a person used last.
// Shared by the popup and the background worker; plain script, no build step.
"use strict";

const READDOD_HOST = "org.readdod.host";
const RECENT_KEY = "recentIntents";
const RECENT_MAX = 5;
// Statuses after which an item's status no longer changes by itself.
const SETTLED = new Set([
  "READY", "SHIPPED", "ARCHIVED", "FAILED_EXTRACTION", "FAILED_AI", "FAILED_EXPORT", "CAPTURED",
]);

class ReaddodError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data || {};
  }
}

// Why the browser could not reach the host, and what to do about it.
function hostFailure(reason) {
  const text = reason || "the host ended";
  let hint = "";
  if (/not found|forbidden/i.test(text)) {
    hint = " Run `readdod browser install --browser chromium` (or chrome, firefox), then reload.";
  }
  return new ReaddodError("HOST_UNAVAILABLE", `readdod's browser host: ${text}.${hint}`);
}

function answerError(answer) {
  const err = answer.error || {};
  const data = err.data || {};
  return new ReaddodError(data.error_code || String(err.code), err.message || "error", data);
}

// One port to the host while a page lives. The host answers each message once, in the
// order sent, so the oldest request waiting is the one an answer belongs to.
class HostPort {
  constructor() {
    this.port = null;
    this.waiting = [];
    this.nextId = 1;
  }

  connect() {
    if (this.port) return this.port;
    const port = chrome.runtime.connectNative(READDOD_HOST);
    port.onMessage.addListener((answer) => {
      const req = this.waiting.shift();
      if (!req) return;
      if (answer.error) req.reject(answerError(answer));
      else req.resolve(answer.result);
    });
    port.onDisconnect.addListener(() => {
      const reason = chrome.runtime.lastError && chrome.runtime.lastError.message;
      const waiting = this.waiting;
      this.port = null;
      this.waiting = [];
      for (const req of waiting) req.reject(hostFailure(reason));
    });
    this.port = port;
    return port;
  }

  call(method, params) {
    return new Promise((resolve, reject) => {
      let port;
      try {
        port = this.connect();
      } catch (e) {
        reject(hostFailure(e.message));
        return;
      }
      const id = this.nextId++;
      this.waiting.push({ id, resolve, reject });
      port.postMessage({ method, params: params || {}, id });
    });
  }
}

// One request on a host of its own: for the background worker, which may sleep between.
function callOnce(method, params) {
  return new Promise((resolve, reject) => {
    chrome.runtime.sendNativeMessage(READDOD_HOST, { method, params: params || {}, id: 1 }, (answer) => {
      if (chrome.runtime.lastError || !answer) {
        reject(hostFailure(chrome.runtime.lastError && chrome.runtime.lastError.message));
      } else if (answer.error) {
        reject(answerError(answer));
      } else {
        resolve(answer.result);
      }
    });
  });
}

function recentIntents() {
  return new Promise((resolve) => {
    chrome.storage.local.get(RECENT_KEY, (got) => resolve((got && got[RECENT_KEY]) || []));
  });
}

async function rememberIntent(intent) {
  const recent = (await recentIntents()).filter((i) => i !== intent);
  recent.unshift(intent);
  await new Promise((resolve) => {
    chrome.storage.local.set({ [RECENT_KEY]: recent.slice(0, RECENT_MAX) }, resolve);
  });
}
