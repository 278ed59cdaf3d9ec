/**
 * The tables of the hub's store in PostgreSQL ({@link openPostgresHubStore}), created and migrated by the package:
 * the row of `resourcesync_hub_schema_version` says which of the migrations were applied. Every table is keyed by
 * the hub (`hub` column), so several hubs share one database. Times are epoch ms (`BIGINT`), as the hub gives them.
 * @see WebSub §5.1 (subscriptions), §7 (content distribution)
 */
import type { PostgresSchema } from '../node/postgres-migrations.js';

/** The migrations in order; append, never edit. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE resourcesync_hub_subscriptions (
     id BIGSERIAL PRIMARY KEY, hub TEXT NOT NULL, topic TEXT NOT NULL, callback TEXT NOT NULL, secret TEXT,
     lease_seconds INTEGER NOT NULL, expires_at BIGINT NOT NULL, verified_at BIGINT NOT NULL,
     state TEXT NOT NULL DEFAULT 'verified', failures INTEGER NOT NULL DEFAULT 0, failing_since BIGINT,
     last_delivery_at BIGINT, last_error TEXT, UNIQUE (hub, topic, callback));
   CREATE INDEX resourcesync_hub_subscriptions_by_expiry ON resourcesync_hub_subscriptions (hub, expires_at);
   CREATE TABLE resourcesync_hub_messages (
     id BIGSERIAL PRIMARY KEY, hub TEXT NOT NULL, topic TEXT NOT NULL, content_type TEXT NOT NULL, body BYTEA NOT NULL,
     received_at BIGINT NOT NULL, size INTEGER NOT NULL);
   CREATE INDEX resourcesync_hub_messages_by_topic ON resourcesync_hub_messages (hub, topic);
   CREATE TABLE resourcesync_hub_deliveries (
     id BIGSERIAL PRIMARY KEY, hub TEXT NOT NULL,
     subscription_id BIGINT NOT NULL REFERENCES resourcesync_hub_subscriptions (id) ON DELETE CASCADE,
     message_id BIGINT NOT NULL REFERENCES resourcesync_hub_messages (id),
     attempts INTEGER NOT NULL DEFAULT 0, next_at BIGINT NOT NULL, claimed_until BIGINT NOT NULL DEFAULT 0, last_error TEXT);
   CREATE INDEX resourcesync_hub_deliveries_queue ON resourcesync_hub_deliveries (hub, subscription_id, id);
   CREATE INDEX resourcesync_hub_deliveries_by_message ON resourcesync_hub_deliveries (message_id);`,
];

/** The hub store's schema. */
export const HUB_SCHEMA: PostgresSchema = {
  what: "the hub's store",
  versionTable: 'resourcesync_hub_schema_version',
  lock: 0x7253_4855, // 'rSHU'
  migrations: MIGRATIONS,
};
