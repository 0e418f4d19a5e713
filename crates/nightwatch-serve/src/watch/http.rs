//! What the watchers see now, in the API (`/api/watch`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Daemon;
use crate::api::ErrorBody;

/// One subject of one watcher, as last seen.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ApiWatched {
    pub watcher: String,
    /// drift, fresh, command, http, query, state, baselines or hazards.
    pub kind: String,
    /// What it is about: a file and key, a glob, an actor, a hazard and its subject.
    pub subject: String,
    /// ok, found or unknown (the probe could not tell).
    pub seen: String,
    pub summary: String,
    /// Seen so since (ms since 1970).
    pub since_ms: i64,
}

/// Every watcher's subjects, and the watchers late now.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ApiWatch {
    pub subjects: Vec<ApiWatched>,
    /// Watchers whose run is overdue, with how late in milliseconds.
    pub late: Vec<ApiLate>,
}

#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ApiLate {
    pub watcher: String,
    pub late_ms: i64,
}

/// The documented routes the readers' secret guards.
pub fn read_routes() -> OpenApiRouter<Arc<Daemon>> {
    OpenApiRouter::new().routes(routes!(watched))
}

#[utoipa::path(
    get,
    path = "/api/watch",
    tag = "watch",
    responses(
        (status = 200, description = "What each watcher last saw of each subject", body = ApiWatch),
        (status = 401, description = "The readers' secret is missing or wrong", body = ErrorBody),
    ),
    security(("readers" = []), ())
)]
async fn watched(State(daemon): State<Arc<Daemon>>) -> Response {
    let subjects = daemon
        .watching
        .subjects()
        .into_iter()
        .map(|s| ApiWatched {
            watcher: s.watcher,
            kind: s.kind,
            subject: s.subject,
            seen: s.seen.as_str().to_owned(),
            summary: s.summary,
            since_ms: s.since_ms,
        })
        .collect();
    let late = daemon
        .watching
        .late(&daemon, daemon.now_ms())
        .into_iter()
        .map(|(watcher, late_ms)| ApiLate { watcher, late_ms })
        .collect();
    Json(ApiWatch { subjects, late }).into_response()
}
