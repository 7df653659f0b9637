//! One script call: as a future (a program that may wait) or run in place (one that never waits), on a
//! VM the worker keeps from call to call, stopped every slice of instructions to check its time, depth
//! and stack budgets and to let the watchdog see it; and one call on the main thread (`call_once`).

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use anyhow::{anyhow, Result};
use rune::runtime::{GeneratorState, RuntimeContext, Stack, TypeHash, Unit};
use rune::{Hash, Value, Vm};

use super::pacing::{Budgets, FnMix};
use crate::scripting::context::error_message;
use crate::scripting::Program;

/// Why a call failed: the script's own failure (a failed cycle) or a budget (ends the phase).
pub enum CallError {
    Cycle(String),
    Budget(String),
}

/// A finished call: its result and its VM (emptied). Its intended and actual start stay in the loop
/// (a call that waits carries them in `Waiting`): moved through the call's future and its `Poll`,
/// two `Instant`s per call cost more than their copy (stores and loads that do not line up). The VM is
/// boxed for the same reason: moved by value (about 90 bytes) into and out of the future, it made an
/// empty call ×0.91 as fast; boxed, only its pointer moves.
type CallOutput = (Result<(), CallError>, Box<Vm>);
type CallFuture = Pin<Box<dyn Future<Output = CallOutput>>>;

/// A call that did not complete on its first poll, with its intended and actual start.
pub(super) struct Waiting {
    pub(super) fut: CallFuture,
    pub(super) origin: Instant,
    pub(super) started: Instant,
}

impl Future for Waiting {
    type Output = (Result<(), CallError>, Instant, Instant);
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let (origin, started) = (self.origin, self.started);
        self.fut.as_mut().poll(cx).map(|(r, _vm)| (r, origin, started))
    }
}

/// What a worker's calls are made of: the program (its unit and runtime, shared or the worker's own
/// copy), the worker's script context, the function mix and the budgets.
pub(super) struct Calls {
    pub(super) unit: Arc<Unit>,
    pub(super) runtime: Arc<RuntimeContext>,
    pub(super) ctx: Value,
    pub(super) fns: FnMix,
    pub(super) budgets: Budgets,
}

impl Calls {
    /// The VM for the next call: the one the last call left (`kept`, see `keep_vm`) or a new one.
    /// Either way the call takes its own references to the unit and context, as the `Vm` that Latte
    /// 0.29 makes per call does: in `shared` mode every worker updates the same two counts per call
    /// (seed 000), in `per-thread` mode its own. Keeping them per VM would be ×1.14 faster (8.35M
    /// against 7.35M empty calls/s here) but would make the two modes differ in more than where the
    /// counts are. Kept, a call makes and frees no VM and no stack.
    #[inline]
    pub(super) fn vm_for_call(&self, kept: Option<Box<Vm>>) -> Box<Vm> {
        match kept {
            Some(mut vm) => {
                *vm.unit_mut() = self.unit.clone();
                *vm.context_mut() = self.runtime.clone();
                vm
            }
            None => Box::new(Vm::with_stack(self.runtime.clone(), self.unit.clone(), new_stack())),
        }
    }

    /// One call of a program that may wait, as a future, on the given VM, which it hands back
    /// emptied so that the loop can keep it (`keep_vm`). The future is not boxed here: the loop polls
    /// it where it will stay (`alloc::Room`).
    #[inline]
    pub(super) fn call(&self, cycle: u64, started: Instant, mut vm: Box<Vm>) -> impl Future<Output = CallOutput> {
        let ctx = self.ctx.clone();
        let hash = self.fns.pick(cycle);
        let budgets = self.budgets;
        async move {
            let r = call_sliced(&mut vm, hash, (ctx, cycle as i64), &started, &budgets).await.and_then(|v| check_result(v).map_err(CallError::Cycle));
            // The values left on the stack are dropped (they count against --script-memory).
            vm.clear();
            (r, vm)
        }
    }

    /// One call of a program that never waits, run here to its end: the same slices, budgets and
    /// watchdog as `call_sliced`, without a future (rust-runner/README.md, "The worker keeps its VM").
    /// Such a call cannot give the loop a turn, so every `CHECKS_PER_YIELD` slices it runs the loop's
    /// own business in its place (`interlude`: the clock, the samples, and whether the call is to be
    /// abandoned); None when the interlude abandoned it. Latte runs such a call to its end too.
    #[inline]
    pub(super) fn call_now(&self, vm: &mut Vm, cycle: u64, started: &Instant, mut interlude: impl FnMut() -> bool) -> Option<Result<(), CallError>> {
        let mut exec = match vm.execute(self.fns.pick(cycle), (self.ctx.clone(), cycle as i64)) {
            Ok(e) => e,
            Err(e) => return Some(Err(vm_error(e, &self.budgets))),
        };
        let mut checks = 0u32;
        loop {
            let mut stop = Stop::None;
            let Poll::Ready(r) = slice(&mut stop, || Poll::Ready(exec.resume())) else {
                unreachable!("a synchronous slice is always ready")
            };
            match slice_outcome(r, stop, exec.vm(), started, &self.budgets) {
                ControlFlow::Break(r) => return Some(r.and_then(|v| check_result(v).map_err(CallError::Cycle))),
                ControlFlow::Continue(()) => {
                    checks += 1;
                    if checks % CHECKS_PER_YIELD == 0 && !interlude() {
                        return None;
                    }
                }
            }
        }
    }

}

/// Values a new VM stack has room for: enough for a small call (the empty workload's uses 2), so
/// that its stack need not grow and the VM can be kept for the next call (`keep_vm`). 32 values are
/// 512 bytes of --script-memory per call in flight.
const STACK_ROOM: usize = 32;

/// A VM stack with room for `STACK_ROOM` values. If the memory budget has no room left, an empty one:
/// the VM then meets the budget on its first push and reports it.
fn new_stack() -> Stack {
    rune::alloc::Vec::try_with_capacity(STACK_ROOM).map(Stack::from).unwrap_or_default()
}

/// The VM of a call that completed on its first poll (emptied), if it may be kept for the next call:
/// only when the memory budget left is what it was before the call (`budget_left`). A VM whose stack
/// or call frames grew (a deep call) changed it, and is dropped: kept, its room would stay charged to
/// --script-memory until the phase ends and could refuse a later call's values. So a kept VM is one
/// made by `vm_for_call` (rune's `Stack` does not tell its capacity), unless a call freed exactly as
/// many bytes of other values as its VM grew by. Kept, a call makes and frees no VM.
#[inline]
pub(super) fn keep_vm(vm: Box<Vm>, budget_left: usize) -> Option<Box<Vm>> {
    (rune::alloc::limit::get() == budget_left).then_some(vm)
}

/// Instructions a call runs between two checks of its time and depth budgets. A script function
/// nests one call per instruction at most (`fn f(n) { f(n + 1) }` takes 4), so a call ends at most
/// `CHECK_SLICE` frames past `--script-depth` (2,500 for that one; 25,000 with the 100k slice before).
const CHECK_SLICE: usize = 10_000;

/// Checks between two yields to the worker's loop: every 100k instructions (about a millisecond of VM
/// work), so that a script stuck in `loop {}` still lets the loop see the deadline and Ctrl-C.
const CHECKS_PER_YIELD: u32 = 10;

/// Calls a script function as a future, stopping it every `CHECK_SLICE` instructions to check the
/// call's time (since `started`) and depth against the budgets, and giving control back to the
/// executor every `CHECKS_PER_YIELD` checks. The memory budget is the thread's (`limit::with` around
/// the runtime): an allocation past it fails in the VM. (A program that never waits runs its calls
/// in place instead: `Calls::call_now`.)
async fn call_sliced<A: rune::runtime::Args>(vm: &mut Vm, hash: Hash, args: A, started: &Instant, budgets: &Budgets) -> Result<Value, CallError> {
    let mut exec = vm.execute(hash, args).map_err(|e| vm_error(e, budgets))?;
    let mut checks = 0u32;
    loop {
        let mut stop = Stop::None;
        let r = {
            // Pinned on this future's own frame: no allocation per call.
            let fut = std::pin::pin!(exec.async_resume());
            (Sliced { fut, stop: &mut stop }).await
        };
        match slice_outcome(r, stop, exec.vm(), started, budgets) {
            ControlFlow::Break(r) => return r,
            ControlFlow::Continue(()) => {
                checks += 1;
                if checks % CHECKS_PER_YIELD == 0 {
                    YieldNow(false).await
                }
            }
        }
    }
}

/// What a slice's end means for its call: its end (the value returned, or the error that ends it),
/// or `Continue` when the VM only used up its slice within the budgets and is to be resumed.
#[inline]
fn slice_outcome(r: rune::runtime::VmResult<GeneratorState>, stop: Stop, vm: &Vm, started: &Instant, budgets: &Budgets) -> ControlFlow<Result<Value, CallError>> {
    match r.into_result() {
        Ok(GeneratorState::Complete(v)) => ControlFlow::Break(Ok(v)),
        Ok(GeneratorState::Yielded(_)) => ControlFlow::Break(Err(vm_error(rune::runtime::VmError::panic("a workload function must not `yield`"), budgets))),
        Err(e) => match slice_end(e, stop, vm, *started, budgets) {
            Some(e) => ControlFlow::Break(Err(e)),
            None => ControlFlow::Continue(()),
        },
    }
}

/// A VM error as a failed cycle, or as the memory budget's breach.
#[cold]
fn vm_error(e: rune::runtime::VmError, budgets: &Budgets) -> CallError {
    let msg = crate::scripting::describe_error(&e);
    match budgets.memory_breach(&msg) {
        Some(b) => CallError::Budget(b),
        None => CallError::Cycle(msg),
    }
}

/// Why a slice of a call ended in an error: the end of the call (a budget or the script's error), or
/// None when the VM only used up its slice within the budgets and can be resumed. Off the path of a
/// call that completes in its first slice.
#[cold]
fn slice_end(e: rune::runtime::VmError, stop: Stop, vm: &Vm, started: Instant, budgets: &Budgets) -> Option<CallError> {
    if stop == Stop::Stack {
        return Some(CallError::Budget(budgets.stack_breach()));
    }
    if stop != Stop::Exhausted || !e.to_string().contains("`limited`") {
        return Some(vm_error(e, budgets));
    }
    // The slice ran out inside a nested VM (a Rune future awaited by the call: the error carries a
    // location per VM it crossed). Rune 0.14 drops that execution on the halt, so the call cannot be
    // resumed; resuming it (as before) went on with `()` for the awaited value.
    if e.first_location().is_some() {
        return Some(CallError::Budget(format!(
            "an awaited script `async fn` ran {CHECK_SLICE} instructions (the runner's check slice) inside another, which the runner cannot pause: \
             make a function that computes this much a plain `fn`, or end the async recursion"
        )));
    }
    // The VM stopped before an instruction because the slice was used up: check the budgets.
    let depth = vm.call_frames().len();
    if depth > budgets.depth {
        return Some(CallError::Budget(format!(
            "a script call nested {depth} calls deep, more than its budget (--script-depth {})",
            budgets.depth
        )));
    }
    let took = started.elapsed();
    if took > budgets.time {
        return Some(CallError::Budget(format!(
            "a script call was still computing after {:.1} s, more than its budget (--script-time {:?})",
            took.as_secs_f64(),
            budgets.time
        )));
    }
    None
}

/// Why a slice of a call stopped, besides finishing or the script's own error.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    None,
    /// The instruction budget ran out.
    Exhausted,
    /// The call's nesting passed the thread's stack budget (alloc::guard_stack).
    Stack,
}

/// Polls a VM future with a fresh instruction budget per poll and notes whether it ran out, or whether
/// the poll went past the stack budget (then it ends the call, even if the poll was pending).
struct Sliced<'a, F> {
    fut: Pin<&'a mut F>,
    stop: &'a mut Stop,
}

impl<F, T> Future for Sliced<'_, F>
where
    F: Future<Output = rune::runtime::VmResult<T>>,
{
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let fut = this.fut.as_mut();
        slice(this.stop, move || fut.poll(cx))
    }
}

/// One slice of a call: `run` (a poll of the VM's future, or a synchronous resume) with a fresh
/// instruction budget, noting in `stop` whether the budget ran out or the run went past the stack
/// budget (then it ends the call, even if the poll was pending).
#[inline]
fn slice<T>(stop: &mut Stop, run: impl FnOnce() -> Poll<rune::runtime::VmResult<T>>) -> Poll<rune::runtime::VmResult<T>> {
    rune::runtime::budget::with(CHECK_SLICE, move || {
        // The watchdog sees a run that never returns (a native function's callback).
        crate::watchdog::enter();
        let p = run();
        crate::watchdog::leave();
        if crate::alloc::stack_passed() {
            *stop = Stop::Stack;
            return Poll::Ready(stack_stop());
        }
        if let Poll::Ready(rune::runtime::VmResult::Err(_)) = &p {
            // A budget left at zero: the VM halted for the budget, not for an error of the script.
            if !rune::runtime::budget::acquire().take() {
                *stop = Stop::Exhausted;
            }
        }
        p
    })
    .call()
}

/// The error that ends a call past its stack budget (named by `slice_end`).
#[cold]
fn stack_stop<T>() -> rune::runtime::VmResult<T> {
    rune::runtime::VmResult::panic("past the stack budget")
}

/// Returns `Pending` once (waking itself), so the worker's loop and the connection tasks get a turn.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The value a script function returned: an `Err` counts as a failed cycle.
fn check_result(v: Value) -> Result<(), String> {
    if v.type_hash() == <Result<Value, Value>>::HASH {
        match rune::from_value::<Result<Value, Value>>(v) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(error_message(&e)),
            Err(e) => Err(e.to_string()),
        }
    } else {
        Ok(())
    }
}

/// Calls one function once on the main thread (schema, erase, prepare), with the given context, under
/// the same budgets as a worker's calls (memory for the whole call, time and depth checked per slice).
pub fn call_once(rt: &tokio::runtime::Runtime, program: &Program, ctx: &Value, name: &str, budgets: &Budgets) -> Result<()> {
    let mut vm = Vm::new(program.runtime.clone(), program.unit.clone());
    let hash = Hash::type_hash([name]);
    let started = Instant::now();
    // The calling thread was started with alloc::script_thread_stack (main.rs).
    crate::alloc::guard_stack(budgets.stack);
    let who = name.to_string();
    let _watched = crate::watchdog::watch(budgets.time, Box::new(move |m| (format!("{who}: {m}"), false)));
    let call = || rt.block_on(call_sliced(&mut vm, hash, (ctx.clone(),), &started, budgets));
    match rune::alloc::limit::with(budgets.memory, call).call() {
        Ok(v) => check_result(v).map_err(|e| anyhow!("{name}: {e}")),
        Err(CallError::Cycle(e) | CallError::Budget(e)) => Err(anyhow!("{name}: {e}")),
    }
}
