/**
 * The system's Chromium (Debian's `chromium` package), driven by playwright-core, which never downloads a
 * browser: for the inbox's browser tests and its bench.
 */
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Where tests keep what a person looks at afterwards (screenshots): `test-artefacts/`, which CI keeps. */
export const ARTEFACTS =
  process.env.TETHER_ARTEFACTS ?? fileURLToPath(new URL('../../test-artefacts/', import.meta.url))

/** The two screens the inbox is tested on: a desktop window and a phone. */
export const VIEWPORTS = {
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 },
} satisfies Record<string, BrowserContextOptions>

export type ViewportName = keyof typeof VIEWPORTS

/** A full-page screenshot under ARTEFACTS/<folder>/<name>.png; returns its path. */
export async function screenshot(page: Page, folder: string, name: string): Promise<string> {
  const dir = join(ARTEFACTS, folder)
  await mkdir(dir, { recursive: true })
  const path = join(dir, `${name}.png`)
  await page.screenshot({ path, fullPage: true })
  return path
}

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`)
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}
