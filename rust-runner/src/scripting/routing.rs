//! Which node a request goes to: the driver's default policy, except for a cluster of one node.
//!
//! With one node there is nothing to choose, yet the default policy works out the token's replicas,
//! the datacenter and rack buckets and the tablet leader on every request (~1,100 instructions per
//! insert under callgrind, 4.5% of the client's; issue 11 item 4). With exactly one node that is
//! connected and not sharded (Cassandra, not ScyllaDB: a shard is a routing choice), this policy
//! returns it at once, which is the node the default policy would pick. Anything else (more nodes, a
//! node down, ScyllaDB's shards, the fallback plan after a failure) is the default policy's.

use scylla::cluster::{ClusterState, NodeRef};
use scylla::errors::RequestAttemptError;
use scylla::policies::load_balancing::{DefaultPolicy, FallbackPlan, LoadBalancingPolicy, RoutingInfo};
use scylla::routing::Shard;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug)]
pub struct OneNodeFirst {
    default: Arc<dyn LoadBalancingPolicy>,
}

impl OneNodeFirst {
    pub fn new() -> OneNodeFirst {
        OneNodeFirst { default: DefaultPolicy::builder().build() }
    }
}

/// The only node of a one-node cluster when a request can go nowhere else: connected (the default
/// policy's own test of a node) and without shards to pick from.
fn only_node(nodes: &[Arc<scylla::cluster::Node>]) -> Option<NodeRef<'_>> {
    sole(nodes, |node| node.is_connected() && node.sharder().is_none())
}

/// The one item of a one-item list, if it is usable. (Apart from the driver's `Node`, which cannot be
/// built outside it, so that the rule has a test.)
fn sole<T>(items: &[T], usable: impl Fn(&T) -> bool) -> Option<&T> {
    match items {
        [item] if usable(item) => Some(item),
        _ => None,
    }
}

impl LoadBalancingPolicy for OneNodeFirst {
    fn pick<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> Option<(NodeRef<'a>, Option<Shard>)> {
        match only_node(cluster.get_nodes_info()) {
            Some(node) => Some((node, None)),
            None => self.default.pick(request, cluster),
        }
    }

    fn fallback<'a>(&'a self, request: &'a RoutingInfo, cluster: &'a ClusterState) -> FallbackPlan<'a> {
        self.default.fallback(request, cluster)
    }

    fn on_request_success(&self, request: &RoutingInfo, latency: Duration, node: NodeRef<'_>) {
        self.default.on_request_success(request, latency, node)
    }

    fn on_request_failure(&self, request: &RoutingInfo, latency: Duration, node: NodeRef<'_>, error: &RequestAttemptError) {
        self.default.on_request_failure(request, latency, node, error)
    }

    fn name(&self) -> String {
        "OneNodeFirst".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::sole;

    #[test]
    fn only_a_single_usable_node_is_picked_directly() {
        let up = |n: &u32| *n != 0;
        assert_eq!(sole(&[7], up), Some(&7));
        // a node that is down, no node, or a choice to make: the driver's default policy decides
        assert_eq!(sole(&[0], up), None);
        assert_eq!(sole::<u32>(&[], up), None);
        assert_eq!(sole(&[7, 8], up), None);
    }
}
