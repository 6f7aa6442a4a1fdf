//! A fake model server on loopback, for every test that needs a model and for trying the
//! console without a key (`stepward dev fake-model`).
//!
//! It speaks both wire formats the `llm` crate does, streaming and not: Anthropic's Messages
//! API at `POST /v1/messages` and OpenAI's Chat Completions at `POST /v1/chat/completions`
//! (also `/chat/completions`). It answers each request with the next turn of a [`Script`]
//! (text, tool calls, several calls in one turn, errors such as a 429 with `retry-after`, a
//! slow or a cut stream, a redirect, raw bytes in neither format), and records every request it received, headers and body
//! included, so tests assert on exactly what the model was shown.
//!
//! It listens on loopback addresses only.

#![forbid(unsafe_code)]

mod script;
mod wire;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

pub use crate::script::{
    RawPart, Script, ScriptCall, ScriptError, ScriptFileError, ScriptRaw, ScriptRedirect,
    ScriptTurn, ScriptUsage,
};
pub use crate::wire::Format;
use crate::wire::Reply;

/// How long a cut answer waits before it breaks, so that what came before reaches the client.
const CUT_PAUSE: Duration = Duration::from_millis(50);

/// The largest request body the fake reads.
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// One request the fake received, as it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Every header, names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of a header (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// Everything received, as text: for "this value appears nowhere" assertions.
    pub fn as_text(&self) -> String {
        let mut text = format!("{} {}\n", self.method, self.path);
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\n"));
        }
        text.push_str(&String::from_utf8_lossy(&self.body));
        text
    }
}

struct Shared {
    script: Mutex<Progress>,
    requests: Mutex<Vec<RecordedRequest>>,
}

struct Progress {
    script: Script,
    next: usize,
    answered: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding either lock leaves a consistent value (a whole push or index
    // step), so a poisoned lock is taken over.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A running fake model. Stops when dropped.
pub struct FakeModel {
    address: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("FakeModel")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// Why the fake could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the fake model listens on loopback only; {0} is not a loopback address")]
    NotLoopback(SocketAddr),
    #[error("the fake model cannot listen on {address}")]
    Listen {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl FakeModel {
    /// Starts on a free port of 127.0.0.1, inside the current tokio runtime.
    pub async fn start(script: Script) -> Result<FakeModel, StartError> {
        FakeModel::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script).await
    }

    /// Starts on `address`, which must be a loopback address.
    pub async fn start_on(address: SocketAddr, script: Script) -> Result<FakeModel, StartError> {
        if !address.ip().is_loopback() {
            return Err(StartError::NotLoopback(address));
        }
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|source| StartError::Listen { address, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| StartError::Listen { address, source })?;
        let shared = Arc::new(Shared {
            script: Mutex::new(Progress {
                script,
                next: 0,
                answered: 0,
            }),
            requests: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            // The fake's only job is to answer; an accept error ends it, and the test that
            // uses it then fails on its requests.
            let _ = serving.await;
        });
        Ok(FakeModel {
            address: bound,
            shared,
            shutdown: Some(shutdown),
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`: the base URL of an Anthropic provider.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// `http://127.0.0.1:PORT/v1`: the base URL of an OpenAI-compatible provider.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// The base URL for a provider of this format.
    pub fn base_url(&self, format: Format) -> String {
        match format {
            Format::Anthropic => self.url(),
            Format::OpenAi => self.openai_base_url(),
        }
    }

    /// `127.0.0.1:PORT`, as the operator's exemption names it.
    pub fn endpoint(&self) -> String {
        self.address.to_string()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Turns not yet used (0 for a repeating script that has started over).
    pub fn remaining_turns(&self) -> usize {
        let progress = lock(&self.shared.script);
        progress.script.turns.len().saturating_sub(progress.next)
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// A fake model on a thread of its own, for tests without a tokio runtime (the CLI's).
pub struct BlockingFakeModel {
    fake: Option<FakeModel>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl BlockingFakeModel {
    /// Starts on a free port of 127.0.0.1 with a runtime of its own.
    pub fn start(script: Script) -> Result<BlockingFakeModel, StartError> {
        BlockingFakeModel::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), script)
    }

    /// Starts on `address`, which must be a loopback address (a fixture's recorded one).
    pub fn start_on(address: SocketAddr, script: Script) -> Result<BlockingFakeModel, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|source| StartError::Listen {
                address: SocketAddr::from(([127, 0, 0, 1], 0)),
                source,
            })?;
        let fake = runtime.block_on(FakeModel::start_on(address, script))?;
        Ok(BlockingFakeModel {
            fake: Some(fake),
            runtime: Some(runtime),
        })
    }
}

impl std::ops::Deref for BlockingFakeModel {
    type Target = FakeModel;

    fn deref(&self) -> &FakeModel {
        match &self.fake {
            Some(fake) => fake,
            // `fake` is `None` only inside `drop`.
            None => unreachable!("a blocking fake model is used after it was dropped"),
        }
    }
}

impl Drop for BlockingFakeModel {
    fn drop(&mut self) {
        drop(self.fake.take());
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, MAX_REQUEST_BYTES).await {
        Ok(body) => body,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "request too large").into_response(),
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|path| path.as_str().to_owned())
        .unwrap_or_default();
    lock(&shared.requests).push(RecordedRequest {
        method: parts.method.to_string(),
        path: path.clone(),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.to_vec(),
    });
    let format = match parts.uri.path() {
        "/v1/messages" => Format::Anthropic,
        "/v1/chat/completions" | "/chat/completions" => Format::OpenAi,
        _ => {
            return json_response(
                StatusCode::NOT_FOUND,
                &json!({ "error": { "message": "the fake model serves POST /v1/messages and POST /v1/chat/completions" } }),
            );
        }
    };
    if parts.method != axum::http::Method::POST {
        return json_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({ "error": { "message": "POST only" } }),
        );
    }
    let request_json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some((turn, number)) = next_turn(&shared) else {
        return json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &wire::error_body(
                format,
                &ScriptError {
                    status: 500,
                    message: "the fake model's script has no more turns".to_owned(),
                    ..ScriptError::default()
                },
            ),
        );
    };
    answer(format, &turn, number, &request_json, body.len()).await
}

fn next_turn(shared: &Shared) -> Option<(ScriptTurn, usize)> {
    let mut progress = lock(&shared.script);
    if progress.next >= progress.script.turns.len() {
        if progress.script.repeat && !progress.script.turns.is_empty() {
            progress.next = 0;
        } else {
            return None;
        }
    }
    let turn = progress.script.turns[progress.next].clone();
    progress.next += 1;
    progress.answered += 1;
    Some((turn, progress.answered))
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn answer(
    format: Format,
    turn: &ScriptTurn,
    number: usize,
    request: &Value,
    request_bytes: usize,
) -> Response {
    if let Some(redirect) = &turn.redirect {
        let status = StatusCode::from_u16(redirect.status).unwrap_or(StatusCode::FOUND);
        let mut response = (status, "").into_response();
        if let Ok(location) = HeaderValue::from_str(&redirect.location) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return response;
    }
    if let Some(raw) = &turn.raw {
        let status = StatusCode::from_u16(raw.status).unwrap_or(StatusCode::OK);
        let body = raw.body();
        let size = raw.chunk_bytes.unwrap_or(body.len()).max(1);
        let pieces: Vec<Bytes> = body.chunks(size).map(Bytes::copy_from_slice).collect();
        let delay = Duration::from_millis(turn.chunk_delay_ms);
        let mut response = Body::from_stream(raw_stream(pieces, delay)).into_response();
        *response.status_mut() = status;
        if let Ok(content_type) = HeaderValue::from_str(&raw.content_type) {
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, content_type);
        }
        return response;
    }
    if let Some(error) = &turn.error {
        let status =
            StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = json_response(status, &wire::error_body(format, error));
        // A number as Rust writes it: `1`, `0.5`, `100000000000000000000`.
        let number = |value: f64| HeaderValue::from_str(&value.to_string()).ok();
        if let Some(seconds) = error.retry_after.and_then(number) {
            response.headers_mut().insert(header::RETRY_AFTER, seconds);
        }
        if let Some(millis) = error.retry_after_ms.and_then(number) {
            response.headers_mut().insert("retry-after-ms", millis);
        }
        return response;
    }
    let answer_bytes = turn.text.len()
        + turn
            .tool_calls
            .iter()
            .map(|call| Value::Object(call.arguments.clone()).to_string().len() + call.name.len())
            .sum::<usize>();
    let reply = Reply {
        turn,
        number,
        model: turn.model.clone().unwrap_or_else(|| {
            request
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("fake-model")
                .to_owned()
        }),
        usage: turn.usage.unwrap_or(ScriptUsage {
            input_tokens: (request_bytes / 4 + 1) as u64,
            output_tokens: (answer_bytes / 4 + 1) as u64,
        }),
    };
    let delay = Duration::from_millis(turn.chunk_delay_ms);
    let streamed = request.get("stream").and_then(Value::as_bool) == Some(true);
    if streamed {
        let events = wire::events(format, &reply);
        let body = Body::from_stream(event_stream(events, delay, turn.cut_after_events));
        return (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response();
    }
    let text = wire::whole(format, &reply).to_string().into_bytes();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if turn.cut_after_events.is_some() {
        // Half the body, then a broken connection.
        let half = text[..text.len() / 2].to_vec();
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            Body::from_stream(event_stream(
                vec![String::from_utf8_lossy(&half).into_owned()],
                Duration::ZERO,
                Some(1),
            )),
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        text,
    )
        .into_response()
}

/// The events, each after `delay`; with `cut`, the connection breaks after that many.
fn event_stream(
    events: Vec<String>,
    delay: Duration,
    cut: Option<usize>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let events = Arc::new(events);
    futures_util::stream::unfold(0usize, move |index| {
        let events = events.clone();
        async move {
            if cut == Some(index) {
                // What was sent so far reaches the client first (hyper writes it out), then
                // the connection breaks in the middle of the answer.
                tokio::time::sleep(CUT_PAUSE).await;
                return Some((
                    Err(std::io::Error::other("the script cuts this stream")),
                    usize::MAX,
                ));
            }
            let event = events.get(index)?.clone();
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Some((Ok(Bytes::from(event)), index + 1))
        }
    })
}

/// The pieces of a raw answer, each after `delay`.
fn raw_stream(
    pieces: Vec<Bytes>,
    delay: Duration,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send {
    futures_util::stream::unfold(pieces.into_iter(), move |mut pieces| async move {
        let piece = pieces.next()?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Some((Ok(piece), pieces))
    })
}

/// Runs a fake on `address` until `shutdown` resolves: `stepward dev fake-model`.
pub async fn serve_until(
    address: SocketAddr,
    script: Script,
    on_ready: impl FnOnce(&FakeModel),
    shutdown: impl Future<Output = ()>,
) -> Result<Vec<RecordedRequest>, StartError> {
    let fake = FakeModel::start_on(address, script).await?;
    on_ready(&fake);
    shutdown.await;
    Ok(fake.requests())
}
