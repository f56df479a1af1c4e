import { describe, expect, it } from 'vitest'
import { ConfigError, snapshotSettings } from '../../../src/stack/index.js'

describe('the snapshot settings', () => {
  const env = { TETHER_STATE_DIR: '/srv/tether' }

  it("keep a finished run's workspace on the worker for a day unless told otherwise", () => {
    expect(snapshotSettings(env)).toMatchObject({ retentionDays: 30, keepWorkspacesHours: 24 })
    expect(snapshotSettings({ ...env, TETHER_WORKSPACES_KEEP_HOURS: '0' }).keepWorkspacesHours).toBe(0)
    expect(snapshotSettings({ ...env, TETHER_WORKSPACES_KEEP_HOURS: '1.5' }).keepWorkspacesHours).toBe(1.5)
  })

  it('refuse hours that are not a number, saying what to write', () => {
    for (const hours of ['-1', 'a day', '24h']) {
      expect(() => snapshotSettings({ ...env, TETHER_WORKSPACES_KEEP_HOURS: hours })).toThrow(ConfigError)
      expect(() => snapshotSettings({ ...env, TETHER_WORKSPACES_KEEP_HOURS: hours })).toThrow(
        `TETHER_WORKSPACES_KEEP_HOURS is "${hours}"; write a number of hours, e.g. 24`,
      )
    }
  })

  it('keep snapshots a number of days above zero, and refuse zero days like any other wrong number', () => {
    expect(snapshotSettings({ ...env, TETHER_SNAPSHOT_RETENTION_DAYS: '0.5' }).retentionDays).toBe(0.5)
    for (const days of ['0', '-3', '1e3', 'a month']) {
      expect(() => snapshotSettings({ ...env, TETHER_SNAPSHOT_RETENTION_DAYS: days })).toThrow(
        `TETHER_SNAPSHOT_RETENTION_DAYS is "${days}"; write a number of days above zero, e.g. 30`,
      )
    }
  })
})
