//! The `ctx` object scripts receive: CQL execution with retries and per-request statistics, prepared
//! statements, `ctx.data` and `ctx.load_cycle_count`. One per worker; nothing in it is shared between
//! threads except the immutable configuration.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rune::runtime::{Formatter, Mut, Ref, TypeHash, VmResult};
use rune::alloc::fmt::TryWrite;
use rune::{vm_write, Any, ContextError, Module, Value};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::metadata::ColumnType;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::response::query_result::{QueryResult, QueryRowsResult};
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use scylla::value::CqlValue;

use crate::scripting::bind::{bind_row, to_cql, RowPool};
use crate::scripting::cql_types::Plain;
use crate::scripting::deadline::{Deadlines, TimedOut};
use crate::scripting::rows::Rows;

/// Connection settings shared (read-only) by every worker.
#[derive(Debug, Clone)]
pub struct CqlConfig {
    pub nodes: Vec<String>,
    pub consistency: Consistency,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    pub retries: u32,
    pub retry_min: Duration,
    pub retry_max: Duration,
    pub user: Option<(String, String)>,
}

/// An error a script sees from a `ctx` call (`?` propagates it and the cycle counts as failed).
#[derive(Any, Debug, Clone)]
#[rune(item = ::latte)]
pub struct CassError(pub String);

impl std::fmt::Display for CassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[rune::function(instance, protocol = DISPLAY_FMT)]
fn cass_error_display(e: &CassError, f: &mut Formatter) -> VmResult<()> {
    vm_write!(f, "{}", e.0)
}

#[rune::function(instance, protocol = DEBUG_FMT)]
fn cass_error_debug(e: &CassError, f: &mut Formatter) -> VmResult<()> {
    vm_write!(f, "CassError({:?})", e.0)
}

/// Per-request counters of one worker, drained into a sample at each sampling boundary.
pub struct RequestStats {
    pub requests: u64,
    pub errors: u64,
    pub retries: u64,
    pub rows: u64,
    pub latency_ns: Histogram<u64>,
}

impl RequestStats {
    pub fn new() -> RequestStats {
        RequestStats { requests: 0, errors: 0, retries: 0, rows: 0, latency_ns: Histogram::new(3).expect("histogram") }
    }
}

impl Default for RequestStats {
    fn default() -> Self {
        Self::new()
    }
}

/// A prepared statement with its bind markers' names and types (read once, used for every bind).
pub struct Statement {
    pub prepared: PreparedStatement,
    pub columns: Vec<(String, ColumnType<'static>)>,
    /// Reused buffers of bound values (one per call in flight).
    rows: RowPool,
    /// The statement has result columns (a SELECT): its rows come back page by page.
    returns_rows: bool,
}

impl Statement {
    fn new(prepared: PreparedStatement) -> Statement {
        let columns = prepared
            .get_variable_col_specs()
            .iter()
            .map(|c| (c.name().to_string(), c.typ().clone().into_owned()))
            .collect();
        let returns_rows = prepared.get_current_result_set_col_specs().get().len() > 0;
        Statement { prepared, columns, rows: RowPool::default(), returns_rows }
    }

    /// Positional (list/tuple) or named (object) arguments → values in bind-marker order.
    pub fn bind(&self, args: &Plain) -> Result<Vec<Option<CqlValue>>, String> {
        match args {
            Plain::List(xs) => {
                if xs.len() != self.columns.len() {
                    return Err(format!("statement has {} bind markers, got {} values", self.columns.len(), xs.len()));
                }
                xs.iter()
                    .zip(&self.columns)
                    .map(|(x, (name, t))| to_cql(x, t).map_err(|e| format!("{name}: {e}")))
                    .collect()
            }
            Plain::Map(fields) => self
                .columns
                .iter()
                .map(|(name, t)| match fields.iter().find(|(k, _)| k == name) {
                    Some((_, v)) => to_cql(v, t).map_err(|e| format!("{name}: {e}")),
                    None => Err(format!("no value for bind marker :{name}")),
                })
                .collect(),
            Plain::Null if self.columns.is_empty() => Ok(Vec::new()),
            Plain::Null => Err(format!(
                "the statement has {} bind markers: pass their values as a list or an object, not ()",
                self.columns.len()
            )),
            other => Err(format!("arguments must be a list or an object, not {}", crate::scripting::bind::describe(other))),
        }
    }
}

/// FNV-1a for the statement names looked up on every `execute_prepared`: std's SipHash cost ~160
/// instructions per insert there. The keys are the script's own names, so its resistance to chosen
/// collisions buys nothing.
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// What a worker needs to build its own `Context` on its own thread (everything here is `Send`).
#[derive(Clone)]
pub struct ContextSeed {
    pub cfg: Arc<CqlConfig>,
    pub statements: Vec<(String, PreparedStatement)>,
    pub data: Plain,
    pub load_cycle_count: i64,
    /// Connect before measuring (the script used CQL while preparing).
    pub connect: bool,
}

#[derive(Any)]
#[rune(item = ::latte)]
pub struct Context {
    cfg: Arc<CqlConfig>,
    session: tokio::sync::OnceCell<Rc<Session>>,
    statements: RefCell<HashMap<String, Rc<Statement>, BuildHasherDefault<Fnv1a>>>,
    pub stats: RefCell<RequestStats>,
    /// The request timeout, swept by the worker's loop (deadline.rs).
    pub deadlines: Rc<Deadlines>,
    start: Cell<Instant>,
    /// Errors of requests that failed (kept for the first few messages).
    #[rune(get, set, add_assign, copy)]
    pub load_cycle_count: i64,
    #[rune(get, set)]
    pub data: Value,
}

impl Context {
    pub fn new(cfg: Arc<CqlConfig>) -> Context {
        Context {
            deadlines: Rc::new(Deadlines::new(cfg.request_timeout)),
            cfg,
            session: tokio::sync::OnceCell::new(),
            statements: RefCell::new(HashMap::default()),
            stats: RefCell::new(RequestStats::new()),
            start: Cell::new(Instant::now()),
            load_cycle_count: 0,
            data: rune::to_value(rune::runtime::Object::new()).expect("object"),
        }
    }

    /// Rebuilds a context on a worker thread from a seed; connects now if the script uses CQL.
    pub async fn from_seed(seed: &ContextSeed) -> Result<Context, CassError> {
        let mut ctx = Context::new(seed.cfg.clone());
        ctx.load_cycle_count = seed.load_cycle_count;
        ctx.data = seed.data.to_value().map_err(CassError)?;
        if seed.connect {
            ctx.session().await?;
        }
        let mut map = ctx.statements.borrow_mut();
        for (k, p) in &seed.statements {
            map.insert(k.clone(), Rc::new(Statement::new(p.clone())));
        }
        drop(map);
        Ok(ctx)
    }

    /// What workers need to clone this context (after the script's `prepare`).
    pub fn seed(&self) -> Result<ContextSeed, String> {
        Ok(ContextSeed {
            cfg: self.cfg.clone(),
            statements: self.statements.borrow().iter().map(|(k, s)| (k.clone(), s.prepared.clone())).collect(),
            data: Plain::from_value(&self.data)?,
            load_cycle_count: self.load_cycle_count,
            connect: self.session.initialized(),
        })
    }

    pub fn connected(&self) -> bool {
        self.session.initialized()
    }

    pub fn reset_start(&self, t: Instant) {
        self.start.set(t);
    }

    async fn session(&self) -> Result<Rc<Session>, CassError> {
        if let Some(s) = self.session.get() {
            return Ok(s.clone());
        }
        // Boxed: connecting is a huge future, and every request future would otherwise carry its size.
        self.session.get_or_try_init(|| Box::pin(async { connect(&self.cfg).await.map(Rc::new) })).await.cloned()
    }

    /// Runs one request (one page) with the configured retries, recording latency, errors and retries.
    async fn request<F, Fut>(&self, what: &str, mut f: F) -> Result<(QueryResult, PagingStateResponse), CassError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(QueryResult, PagingStateResponse), ExecutionError>>,
    {
        let mut attempt = 0u32;
        let mut delay = self.cfg.retry_min;
        loop {
            let t0 = Instant::now();
            // The driver's future (~3.9 KB) goes to the heap from a plain function: built here, in
            // the async fn, its temporary would take that room in our future too (rustc keeps space
            // for moved-out locals), and Rune copies our future to the heap on every call.
            let result = self.deadlines.bound(t0, crate::alloc::boxed(&mut f)).await;
            let ns = t0.elapsed().as_nanos() as u64;
            let mut st = self.stats.borrow_mut();
            st.requests += 1;
            let _ = st.latency_ns.record(ns.max(1));
            let (message, retry) = match result {
                Ok(Ok(r)) => return Ok(r),
                Ok(Err(e)) => (e.to_string(), retryable(&e)),
                Err(TimedOut(d)) => (format!("no response within --request-timeout {d:?}"), true),
            };
            st.errors += 1;
            if attempt >= self.cfg.retries || !retry {
                return Err(CassError(format!("{what}: {message}")));
            }
            st.retries += 1;
            drop(st);
            attempt += 1;
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(self.cfg.retry_max);
        }
    }

    /// Every page of a statement (the driver's page size, 5000 rows), as one `Rows` value. The rows
    /// are counted here; they are converted to Rune values only if the script looks at them.
    async fn all_pages<F, Fut>(&self, what: &str, mut page: F) -> Result<Rows, CassError>
    where
        F: FnMut(PagingState) -> Fut,
        Fut: std::future::Future<Output = Result<(QueryResult, PagingStateResponse), ExecutionError>>,
    {
        let mut pages: Vec<QueryRowsResult> = Vec::new();
        let mut state = PagingState::start();
        loop {
            let (result, next) = self.request(what, || page(state.clone())).await?;
            if result.is_rows() {
                let rows = result.into_rows_result().map_err(|e| CassError(format!("{what}: reading the result: {e}")))?;
                self.stats.borrow_mut().rows += rows.rows_num() as u64;
                pages.push(rows);
            }
            match next {
                PagingStateResponse::HasMorePages { state: s } => state = s,
                PagingStateResponse::NoMorePages => return Ok(Rows::new(pages)),
            }
        }
    }
}

/// Errors worth retrying: timeouts, overload, lost connections. A bad statement never is.
fn retryable(e: &ExecutionError) -> bool {
    match e {
        ExecutionError::BadQuery(_) | ExecutionError::PrepareError(_) => false,
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => !matches!(
            db,
            DbError::SyntaxError
                | DbError::Invalid
                | DbError::AlreadyExists { .. }
                | DbError::Unauthorized
                | DbError::ConfigError
                | DbError::AuthenticationError
        ),
        _ => true,
    }
}

/// Opens a session to the configured contact points; a clear error when none answers.
pub async fn connect(cfg: &CqlConfig) -> Result<Session, CassError> {
    let profile = ExecutionProfile::builder()
        .consistency(cfg.consistency)
        // The timeout is ours (deadline.rs): the driver's costs a timer and a copy of its future per
        // request.
        .request_timeout(None)
        // Retries are ours (counted and backed off); the driver must not retry behind our back.
        .retry_policy(Arc::new(FallthroughRetryPolicy))
        // The driver's default policy, without its per-request work when there is one node (routing.rs).
        .load_balancing_policy(Arc::new(crate::scripting::routing::OneNodeFirst::new()))
        .build();
    let mut b = SessionBuilder::new()
        .known_nodes(&cfg.nodes)
        .connection_timeout(cfg.connect_timeout)
        .default_execution_profile_handle(profile.into_handle());
    if let Some((u, p)) = &cfg.user {
        b = b.user(u, p);
    }
    // The driver's own timeout covers the TCP connect only: a peer that accepts and never answers the
    // CQL handshake would hang the session forever, so the whole set-up is bounded too.
    let nodes = cfg.nodes.join(",");
    match tokio::time::timeout(cfg.connect_timeout, b.build()).await {
        Ok(Ok(session)) => Ok(session),
        Ok(Err(e)) => Err(CassError(format!("cannot connect to Cassandra at {nodes}: {e}"))),
        Err(_) => Err(CassError(format!(
            "cannot connect to Cassandra at {nodes}: no CQL session within --connect-timeout {:?}",
            cfg.connect_timeout
        ))),
    }
}

/// `ctx.execute(cql)`: runs an unprepared statement; its rows (every page) come back as `Rows`.
#[rune::function(instance)]
async fn execute(ctx: Ref<Context>, cql: Ref<str>) -> Result<Rows, CassError> {
    crate::alloc::boxed(move || unprepared_request(ctx, cql)).await
}

// Rune copies a native async function's future twice per call (into its own async block, then to the
// heap): the functions scripts call hold only their arguments and a pointer to the request's future.
async fn unprepared_request(ctx: Ref<Context>, cql: Ref<str>) -> Result<Rows, CassError> {
    let session = ctx.session().await?;
    let text: &str = &cql;
    ctx.all_pages(text, |state| session.query_single_page(text, (), state)).await
}

/// `ctx.prepare(key, cql)`: prepares a statement for `execute_prepared(key, …)`.
#[rune::function(instance)]
async fn prepare(ctx: Ref<Context>, key: Ref<str>, cql: Ref<str>) -> Result<(), CassError> {
    let session = ctx.session().await?;
    let prepared = match tokio::time::timeout(ctx.cfg.request_timeout, session.prepare(&*cql)).await {
        Ok(r) => r.map_err(|e| CassError(format!("prepare {}: {e}", &*cql)))?,
        Err(_) => {
            return Err(CassError(format!("prepare {}: no response within --request-timeout {:?}", &*cql, ctx.cfg.request_timeout)))
        }
    };
    ctx.statements.borrow_mut().insert(key.to_string(), Rc::new(Statement::new(prepared)));
    Ok(())
}

/// `ctx.execute_prepared(key, args)`: args are a list (positional) or an object (named markers); the
/// statement's rows (every page) come back as `Rows`.
#[rune::function(instance)]
async fn execute_prepared(ctx: Ref<Context>, key: Ref<str>, args: Value) -> Result<Rows, CassError> {
    crate::alloc::boxed(move || prepared_request(ctx, key, args)).await
}

async fn prepared_request(ctx: Ref<Context>, key: Ref<str>, args: Value) -> Result<Rows, CassError> {
    let stmt = ctx
        .statements
        .borrow()
        .get(&*key)
        .cloned()
        .ok_or_else(|| CassError(format!("no prepared statement named '{}'", &*key)))?;
    let args = struct_as_object(args, &stmt);
    // Values are written straight into a reused buffer; anything that path does not bind (an error, a
    // missing marker) takes the general path, which binds the same bytes or words the error as always.
    let mut row = stmt.rows.take();
    if bind_row(&args, &stmt.columns, &mut row).is_err() {
        let plain = Plain::from_value(&args).map_err(CassError)?;
        let values = stmt.bind(&plain).map_err(|e| CassError(format!("{}: {e}", &*key)))?;
        row.fill(&values, &stmt.columns).map_err(|e| CassError(format!("{}: {e}", &*key)))?;
    }
    let session = ctx.session().await?;
    let result = if !stmt.returns_rows {
        // No result columns (INSERT, UPDATE, DELETE): no pages to follow, one unpaged request, as
        // before rows came back to scripts (the paged call costs the write path more client CPU).
        let once = || async {
            let r = session.execute_unpaged(&stmt.prepared, &row).await?;
            Ok((r, PagingStateResponse::NoMorePages))
        };
        ctx.all_pages(&key, |_| once()).await
    } else {
        ctx.all_pages(&key, |state| session.execute_single_page(&stmt.prepared, &row, state)).await
    };
    stmt.rows.give(row);
    result
}

/// Latte also binds a script `struct` by field name: it becomes an object keyed by the markers' names
/// (a field the statement does not name is left out; a marker without a field is then an error).
/// Lists, tuples and objects pass untouched, without a conversion attempt.
fn struct_as_object(args: Value, stmt: &Statement) -> Value {
    let h = args.type_hash();
    if h == rune::runtime::Vec::HASH || h == rune::runtime::Object::HASH || h == rune::runtime::OwnedTuple::HASH {
        return args;
    }
    let Ok(fields) = rune::from_value::<rune::runtime::DynamicStruct>(args.clone()) else { return args };
    let mut obj = rune::runtime::Object::new();
    for (name, _) in &stmt.columns {
        if let (Some(v), Ok(k)) = (fields.get(name.as_str()), rune::alloc::String::try_from(name.as_str())) {
            if obj.insert(k, v.clone()).is_err() {
                return args;
            }
        }
    }
    rune::to_value(obj).unwrap_or(args)
}

/// `ctx.elapsed_secs()`: seconds since the current phase started.
#[rune::function(instance)]
fn elapsed_secs(ctx: &Context) -> f64 {
    ctx.start.get().elapsed().as_secs_f64()
}

// Scripts may call `ctx.data` mutably through the field protocol; nothing else needs `Mut`.
#[allow(dead_code)]
fn _mut(_: Mut<Context>) {}

/// Adds the `Context` and `CassError` types to the `latte` module.
pub fn install(m: &mut Module) -> Result<(), ContextError> {
    m.ty::<Context>()?;
    m.ty::<CassError>()?;
    m.function_meta(cass_error_display)?;
    m.function_meta(cass_error_debug)?;
    m.function_meta(execute)?;
    m.function_meta(prepare)?;
    m.function_meta(execute_prepared)?;
    m.function_meta(elapsed_secs)?;
    crate::scripting::rows::install(m)?;
    Ok(())
}

/// The message of a failed cycle's error value.
pub fn error_message(v: &Value) -> String {
    if v.type_hash() == CassError::HASH {
        if let Ok(e) = v.borrow_ref::<CassError>() {
            return e.0.clone();
        }
    }
    if let Ok(s) = v.borrow_string_ref() {
        return s.to_string();
    }
    format!("{v:?}")
}
