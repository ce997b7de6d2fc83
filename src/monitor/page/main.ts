/**
 * The monitor's page: the overview at `/`, one session at `/sessions/ID`. Built with DOM
 * calls and text nodes only (see `dom.ts`); loaded as `/app.js` under a CSP that runs nothing
 * else.
 */
import { h } from "./dom.ts"
import * as Overview from "./overview.ts"
import * as Session from "./session.ts"

const start = () => {
  const app = document.getElementById("app")!
  const header = h("header", {}, h("a", { href: "/", class: "brand" }, "Skein monitor"), " ", h("span", { class: "mode" }), h("span", { class: "offline-note" }, " · reconnecting…"))
  document.body.prepend(header)
  const match = /^\/sessions\/([^/]+)$/.exec(location.pathname)
  let id: string | undefined
  try {
    id = match === null ? undefined : decodeURIComponent(match[1]!)
  } catch {
    id = match![1]
  }
  if (id !== undefined) Session.mount(app, header, id)
  else Overview.mount(app, header)
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start)
else start()
