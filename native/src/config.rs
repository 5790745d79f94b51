//! Mirrors part of `state/config.py`: the broker settings the group and offsets managers obey, under Kafka's
//! names (GroupCoordinatorConfig), with Kafka's defaults. Reading and validating the settings stays with
//! the reference, which hands the native core a validated config.

/// Kafka's hard-coded CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a member added by a join must rejoin within 5
/// minutes of being added or it is removed.
pub const NEW_MEMBER_JOIN_TIMEOUT_MS: i64 = 300_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoordinatorConfig {
    pub group_min_session_timeout_ms: i64,
    pub group_max_session_timeout_ms: i64,
    pub group_initial_rebalance_delay_ms: i64,
    pub group_max_size: i64,
    pub offsets_retention_minutes: i64,
    pub offset_metadata_max_bytes: i64,
    pub group_consumer_session_timeout_ms: i64,
    pub group_consumer_heartbeat_interval_ms: i64,
    pub group_consumer_max_size: i64,
    /// The server-side assignors members may name, the first the default.
    pub group_consumer_assignors: Vec<String>,
    /// ConsumerGroupMigrationPolicy: "disabled", "upgrade", "downgrade" or "bidirectional".
    pub group_consumer_migration_policy: String,
    pub group_consumer_assignment_interval_ms: i64,
    pub group_consumer_regex_refresh_interval_ms: i64,
    /// coordsim.kafka.version 4.0: Kafka 4.0.0's behaviour where it differs (docs/consumer-protocol.md).
    pub kafka_4_0: bool,
}

impl CoordinatorConfig {
    pub fn offsets_retention_ms(&self) -> i64 {
        self.offsets_retention_minutes * 60_000
    }
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 1_800_000,
            group_initial_rebalance_delay_ms: 3_000,
            group_max_size: i64::from(i32::MAX),
            offsets_retention_minutes: 10_080,
            offset_metadata_max_bytes: 4_096,
            group_consumer_session_timeout_ms: 45_000,
            group_consumer_heartbeat_interval_ms: 5_000,
            group_consumer_max_size: i64::from(i32::MAX),
            group_consumer_assignors: vec!["uniform".into(), "range".into()],
            group_consumer_migration_policy: "bidirectional".into(),
            group_consumer_assignment_interval_ms: 1_000,
            group_consumer_regex_refresh_interval_ms: 600_000,
            kafka_4_0: false,
        }
    }
}
