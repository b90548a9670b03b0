//! The one shared pointer between the two paths: the data path `load()`s, the control path swaps.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::RouteTable;
use crate::stats::Metrics;

pub struct TableHandle {
    current: ArcSwap<RouteTable>,
    /// Serialises swaps so generations are strictly increasing; readers never take it.
    swapping: Mutex<()>,
    metrics: Arc<Metrics>,
}

impl TableHandle {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        TableHandle {
            current: ArcSwap::from_pointee(RouteTable::empty()),
            swapping: Mutex::new(()),
            metrics,
        }
    }

    /// The table in force. One atomic load; no lock.
    pub fn load(&self) -> Arc<RouteTable> {
        self.current.load_full()
    }

    /// Whether a real table (not the empty startup one) is serving.
    pub fn is_loaded(&self) -> bool {
        self.current.load().generation > 0
    }

    /// Puts `table` in force with the next generation number and returns it.
    pub fn swap(&self, mut table: RouteTable) -> u64 {
        let _guard = self.swapping.lock().unwrap_or_else(|p| p.into_inner());
        let previous = self.current.load();
        table.generation = previous.generation + 1;
        let generation = table.generation;
        for old in previous.routes() {
            if table.route(&old.name).is_none() {
                self.metrics.remove_route(&old.name);
            }
        }
        for route in table.routes() {
            self.metrics
                .set_canary_weight(&route.name, route.canary_weight_bp());
        }
        self.current.store(Arc::new(table));
        self.metrics.table_swapped(generation);
        generation
    }
}
