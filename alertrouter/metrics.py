"""Prometheus metrics, in a registry per app so tests and several apps in one process don't collide."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from alertrouter import __version__

__all__ = ["Metrics"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class Metrics:
    """The metrics alertrouter exports, built per area; each attribute is one family."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._ingest(self.registry)
        self._engine(self.registry)
        self._process(self.registry)
        self._delivery(self.registry)
        self._loops(self.registry)
        self._node_lookup(self.registry)
        self._escalation(self.registry)
        self._heartbeats(self.registry)
        self._logins(self.registry)
        self._node_aliases(self.registry)
        # jobs hit by the live alerts (engine/jobs.py, with the `jobs:` rules)
        self.jobs_hit = Gauge(
            "alertrouter_jobs_hit",
            "Jobs hit by the live alerts now, as the engine's leader last wrote them; 0 on other replicas.",
            registry=self.registry,
        )

    def _ingest(self, r: CollectorRegistry) -> None:
        """Webhooks in, what they did to the stored alerts, and what the store holds."""
        self.webhooks = Counter(
            "alertrouter_webhooks_received_total",
            "Payloads received, by endpoint and result (stored, repeat, partial, rejected, "
            "unauthorized, too_large, unavailable).",
            ["endpoint", "result"],
            registry=r,
        )
        self.alerts_received = Counter(
            "alertrouter_alerts_received_total",
            "Alerts received in accepted payloads.",
            ["endpoint"],
            registry=r,
        )
        self.transitions = Counter(
            "alertrouter_alert_transitions_total",
            "What received alerts did to the stored state (new_firing, resolved, unchanged, stale, ...).",
            ["kind"],
            registry=r,
        )
        self.truncated = Counter(
            "alertrouter_webhook_truncated_alerts_total",
            "Alerts Alertmanager cut from webhooks (max_alerts); these never reached alertrouter.",
            registry=r,
        )
        self.expired = Counter(
            "alertrouter_alerts_expired_total",
            "Firing alerts resolved because endsAt passed unrefreshed.",
            registry=r,
        )
        self.ingest_latency = Histogram(
            "alertrouter_ingest_duration_seconds",
            "Time from request to answer for ingest endpoints.",
            ["endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.db_errors = Counter(
            "alertrouter_db_errors_total", "Store operations that failed.", ["operation"], registry=r
        )
        self.alerts = Gauge(
            "alertrouter_alerts", "Stored alerts by state (read at scrape time).", ["state"], registry=r
        )
        self.config_hash = Gauge(
            "alertrouter_config_hash",
            "Hash of the loaded rules, as a label; value is always 1.",
            ["hash"],
            registry=r,
        )

    def _engine(self, r: CollectorRegistry) -> None:
        """The engine's passes and decisions; stale is not resolved (pipeline/stale.py)."""
        self.inhibited = Counter(
            "alertrouter_alerts_inhibited_total", "Alerts that became inhibited, by inhibit rule.", ["rule"], registry=r
        )
        self.intended = Counter(
            "alertrouter_notifications_intended_total",
            "Notifications the engine decided to send (compare with alertrouter_alerts_received_total).",
            ["receiver", "reason"],
            registry=r,
        )
        self.decisions = Gauge(
            "alertrouter_alert_decisions", "Live alerts by the engine's latest decision.", ["decision"], registry=r
        )
        self.engine_pass = Histogram(
            "alertrouter_engine_pass_duration_seconds",
            "Duration of one engine pass.",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.engine_passes = Counter(
            "alertrouter_engine_passes_total",
            "Engine passes that evaluated something, by scope: incremental (what the changes touched) or "
            "full (everything: the first after the lease is taken, a time interval's change, the periodic one).",
            ["scope"],
            registry=r,
        )
        self.engine_evaluated = Counter(
            "alertrouter_engine_incidents_evaluated_total",
            "Incidents (node and storm) the engine passes worked out again.",
            registry=r,
        )
        self.alerts_stale = Gauge(
            "alertrouter_alerts_stale",
            "Live alerts resolved because their node or exporter went dark, whose resolve waits for the data to "
            "return (decision stale).",
            registry=r,
        )
        self.stale = Counter(
            "alertrouter_stale_total",
            "Alerts that became stale, by why (source_down: a node-down alert of their node; together: their "
            "exporter's alerts resolved together; returning).",
            ["reason"],
            registry=r,
        )

    def _process(self, r: CollectorRegistry) -> None:
        """The process itself: SQLite's write-ahead log, the garbage collector, the version."""
        self.sqlite_checkpoint = Histogram(
            "alertrouter_sqlite_checkpoint_duration_seconds",
            "SQLite only: one checkpoint of the write-ahead log into the database file, taken every second "
            "by a thread of its own (not by the commits of webhooks and engine passes).",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.sqlite_wal_pages = Gauge(
            "alertrouter_sqlite_wal_pages",
            "SQLite only: pages in the write-ahead log at the last checkpoint (it starts over once all are "
            "copied; a figure that keeps growing means checkpoints cannot finish: a reader holds them back).",
            registry=r,
        )
        self.gc_pause = Histogram(
            "alertrouter_gc_pause_seconds",
            "Collections of Python's cyclic garbage collector, by generation, and how long each stopped the "
            "process (nothing else runs meanwhile: a long generation 2 one delays every answer).",
            ["generation"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.build_info = Gauge("alertrouter_build_info", "Version of this alertrouter.", ["version"], registry=r)
        self.build_info.labels(version=__version__).set(1)

    def _delivery(self, r: CollectorRegistry) -> None:
        """Deliveries, the channels' health and limits, voice calls."""
        self.notifications = Counter(
            "alertrouter_notifications_total",
            "Deliveries by channel and result (sent, retry, rate_limited, dead, coalesced, failed_over, capped, "
            "unconfigured, error: an unexpected failure of one message, split: a combined message sent apart).",
            ["channel", "result"],
            registry=r,
        )
        self.delivery_latency = Histogram(
            "alertrouter_delivery_latency_seconds",
            "From the engine's decision to the vendor's acceptance, per channel (waits and retries included).",
            ["channel"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800),
            registry=r,
        )
        self.send_duration = Histogram(
            "alertrouter_channel_request_duration_seconds",
            "Duration of one request to a vendor.",
            ["channel"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.rate_limited = Counter(
            "alertrouter_channel_rate_limited_total",
            "Times a channel was rate limited: by the vendor's answer (vendor) or held back by its budget (budget).",
            ["channel", "by"],
            registry=r,
        )
        self.dead_letters = Gauge(
            "alertrouter_dead_letters",
            "Deliveries given up on, per channel (read at scrape time).",
            ["channel"],
            registry=r,
        )
        self.channel_healthy = Gauge(
            "alertrouter_channel_healthy",
            "1 unless the channel's last failure was permanent (bad token, sign mismatch); read at scrape time.",
            ["channel"],
            registry=r,
        )
        self.channel_blocked = Gauge(
            "alertrouter_channel_blocked",
            "1 while the vendor's rate-limit block is in force for the channel (read at scrape time).",
            ["channel"],
            registry=r,
        )
        self.voice_calls = Counter(
            "alertrouter_voice_calls_total",
            "Calls a voice channel's vendor accepted (one per number and message; answered or not).",
            ["channel"],
            registry=r,
        )
        self.voice_calls_capped = Counter(
            "alertrouter_voice_calls_capped_total",
            "Calls not made because the number had reached the channel's daily_cap_per_number.",
            ["channel"],
            registry=r,
        )

    def _loops(self, r: CollectorRegistry) -> None:
        """The background loops, their leases and the scheduled jobs."""
        self.scheduled_runs = Counter(
            "alertrouter_scheduled_runs_total",
            "Scheduled job runs by job (digest:<receiver>, housekeeping) and result (sent, unconfigured, "
            "failed, claimed, not_leader, done).",
            ["job", "result"],
            registry=r,
        )
        self.scheduler_leader = Gauge(
            "alertrouter_scheduler_leader", "1 while this replica holds the scheduler lease.", registry=r
        )
        self.engine_leader = Gauge(
            "alertrouter_engine_leader",
            "1 while this replica holds the engine lease (decides and notifies for every replica).",
            registry=r,
        )
        self.loop_errors = Counter(
            "alertrouter_loop_errors_total",
            "Exceptions a background loop (engine, delivery, maintenance, scheduler) survived and retried.",
            ["loop"],
            registry=r,
        )
        self.loop_last_pass = Gauge(
            "alertrouter_loop_last_pass_timestamp_seconds",
            "When the loop last completed a pass (Unix time).",
            ["loop"],
            registry=r,
        )
        self.loop_stalled = Gauge(
            "alertrouter_loop_stalled",
            "1 while the loop has completed no pass within its allowance (read at scrape time); /readyz fails too.",
            ["loop"],
            registry=r,
        )
        self.quarantined = Gauge(
            "alertrouter_quarantined",
            "Items excluded from processing after repeated failures, by kind (alert, delivery); read at scrape time.",
            ["kind"],
            registry=r,
        )

    def _node_lookup(self, r: CollectorRegistry) -> None:
        """The Prometheus node lookup (`alertrouter.discovery`)."""
        self.node_lookup_errors = Counter(
            "alertrouter_node_lookup_errors_total",
            "Failed reads of a series by the Prometheus node lookup, by series and problem (unreachable, timeout, "
            "http_status, query_error, bad_answer); the last good answer stays in force.",
            ["series", "problem"],
            registry=r,
        )
        self.node_lookup_last_success = Gauge(
            "alertrouter_node_lookup_last_success_timestamp_seconds",
            "When the Prometheus node lookup last read the series successfully (Unix time).",
            ["series"],
            registry=r,
        )
        self.node_lookup_names = Gauge(
            "alertrouter_node_lookup_names",
            "Addresses and pod names the Prometheus node lookup maps to nodes, in force, by source.",
            ["source"],
            registry=r,
        )
        self.node_lookup_conflicts = Gauge(
            "alertrouter_node_lookup_conflicts",
            "Addresses or names that two nodes claim in the lookup's latest answers (the winner is logged).",
            registry=r,
        )

    def _escalation(self, r: CollectorRegistry) -> None:
        """On-call escalation (engine/escalation.py)."""
        self.escalation_steps = Counter(
            "alertrouter_escalation_steps_total",
            "Escalation steps taken (an incident not acknowledged in time), by policy and step number (1-based).",
            ["policy", "step"],
            registry=r,
        )
        self.escalations_active = Gauge(
            "alertrouter_escalations_active",
            "Escalation chains running (incidents not yet acknowledged or resolved with steps still to take), "
            "as the engine's leader holds them; 0 on other replicas.",
            registry=r,
        )

    def _heartbeats(self, r: CollectorRegistry) -> None:
        """Source liveness: heartbeats (`alertrouter.liveness`)."""
        self.heartbeat_last_seen = Gauge(
            "alertrouter_heartbeat_last_seen_timestamp_seconds",
            "When each configured heartbeat was last heard from (Unix time; absent until it first is).",
            ["heartbeat"],
            registry=r,
        )
        self.heartbeat_missing = Gauge(
            "alertrouter_heartbeat_missing",
            "1 while a heartbeat is silent past its timeout (its AlertrouterHeartbeatMissing alert is raised), else 0.",
            ["heartbeat"],
            registry=r,
        )

    def _logins(self, r: CollectorRegistry) -> None:
        """Console login limits (`alertrouter.web.logins`)."""
        self.login_failures = Counter(
            "alertrouter_login_failures_total",
            "Console logins refused for a wrong user name or password (their passwords were checked).",
            registry=r,
        )
        self.login_throttled = Counter(
            "alertrouter_login_throttled_total",
            "Console logins refused with 429 unchecked, because the user name (account) or the client address "
            "(address) was locked or at its limit of failures.",
            ["scope"],
            registry=r,
        )
        self.login_lockouts = Counter(
            "alertrouter_login_lockouts_total",
            "Locks of a user name (account) or a client address (address) after too many failed console logins.",
            ["scope"],
            registry=r,
        )
        for scope in ("account", "address"):  # both series from the start, at 0, for rate() and alerts
            self.login_throttled.labels(scope=scope)
            self.login_lockouts.labels(scope=scope)

    def _node_aliases(self, r: CollectorRegistry) -> None:
        """Learned node aliases: moves held for a second alert or the lookup (pipeline/aliases.py)."""
        self.node_alias_conflicts = Counter(
            "alertrouter_node_alias_conflicts_total",
            "Moves of a learned address to another node that were held because one alert alone claimed it "
            "(counted once each, when first held; also logged).",
            registry=r,
        )
        self.node_alias_held = Gauge(
            "alertrouter_node_alias_held",
            "Learned addresses whose move to another node is held now, waiting for a second alert or the "
            "Prometheus lookup to agree, as the engine's leader holds them; 0 on other replicas.",
            registry=r,
        )
