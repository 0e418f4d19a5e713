//! Why a request body cannot become an alert.

use thiserror::Error;

/// Why a body was refused.
///
/// Every variant is permanent: the same bytes sent again can never parse, so the daemon replies
/// `400` (which Alertmanager does not retry) and puts this message in the body for the person
/// reading the sender's logs.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum IntakeError {
    #[error("body is empty")]
    EmptyBody,
    #[error("body is not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 { offset: usize },
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("content type {found:?} is not supported here; send {expected}")]
    UnsupportedContentType {
        found: String,
        expected: &'static str,
    },
    #[error("missing field {0}")]
    MissingField(String),
    #[error("field {field} is {found}, expected {expected}")]
    WrongType {
        field: String,
        found: &'static str,
        expected: &'static str,
    },
    #[error("field {field} is {value:?}, expected {expected}")]
    UnknownValue {
        field: String,
        value: String,
        expected: String,
    },
    #[error(
        "webhook version {0} is not supported; nightwatch reads Alertmanager webhook version 4"
    )]
    UnsupportedVersion(String),
    #[error("multipart body: {0}")]
    Multipart(String),
    #[error("content type: {0}")]
    ContentType(String),
    #[error("mapping: {0}")]
    Mapping(String),
}
