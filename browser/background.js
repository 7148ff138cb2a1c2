// The context menu for links: save a link for one of the last intents, or choose another.
"use strict";

if (typeof importScripts === "function") importScripts("native.js");

const MENU = "readdod-link";
const OTHER = "readdod-link-other";
const RECENT_PREFIX = "readdod-link-recent-";

async function buildMenu() {
  const recent = await recentIntents();
  await new Promise((resolve) => chrome.contextMenus.removeAll(resolve));
  chrome.contextMenus.create({ id: MENU, title: "Save link to readdod", contexts: ["link"] });
  recent.forEach((intent, i) => {
    chrome.contextMenus.create({
      id: RECENT_PREFIX + i,
      parentId: MENU,
      title: `For: ${intent.length > 60 ? intent.slice(0, 59) + "…" : intent}`,
      contexts: ["link"],
    });
  });
  chrome.contextMenus.create({
    id: OTHER, parentId: MENU, title: "Another intent…", contexts: ["link"],
  });
}

function flag(tabId, text, title) {
  const where = tabId !== undefined && tabId >= 0 ? { tabId } : {};
  chrome.action.setBadgeText({ ...where, text });
  chrome.action.setTitle({ ...where, title });
}

// Save one link (its page is not open, so the daemon fetches it); the badge says how it went.
async function captureLink(url, intent, tabId) {
  try {
    const res = await callOnce("capture", { url, intent });
    await rememberIntent(intent);
    flag(tabId, "✓", `readdod: saved ${url} (${res.item.status})`);
    return res;
  } catch (err) {
    flag(tabId, "!", `readdod: ${err.code}: ${err.message}`);
    throw err;
  }
}

chrome.contextMenus.onClicked.addListener(async (info, tab) => {
  const tabId = tab && tab.id;
  if (info.menuItemId === OTHER) {
    const q = new URLSearchParams({ url: info.linkUrl });
    if (info.linkText) q.set("title", info.linkText);
    chrome.windows.create({
      url: chrome.runtime.getURL(`popup.html?${q}`), type: "popup", width: 420, height: 520,
    });
    return;
  }
  const id = String(info.menuItemId);
  if (!id.startsWith(RECENT_PREFIX)) return;
  const intent = (await recentIntents())[Number(id.slice(RECENT_PREFIX.length))];
  if (intent) captureLink(info.linkUrl, intent, tabId).catch(() => {});
});

chrome.runtime.onInstalled.addListener(buildMenu);
chrome.runtime.onStartup.addListener(buildMenu);
chrome.storage.onChanged.addListener((changes) => {
  if (RECENT_KEY in changes) buildMenu();
});

// What tests reach through the DevTools protocol: a context-menu click cannot be made there.
self.readdod = { captureLink, buildMenu };
