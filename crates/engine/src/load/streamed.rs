//! Streamed responses (gRPC server streaming): every message of a call timed from the call's
//! intended start, as its latency is, the first message of each call apart; added over the
//! threads like every other figure. A call's own latency is the time to its last message.

use results::Histogram;

#[derive(Debug, Clone)]
pub struct Streamed {
    /// Calls that brought at least one message, and the messages of all.
    pub calls: u64,
    pub messages: u64,
    /// From each call's intended start to its first message.
    pub first: Histogram,
    /// From each call's intended start to each of its messages.
    pub each: Histogram,
}

impl Default for Streamed {
    fn default() -> Streamed {
        Streamed {
            calls: 0,
            messages: 0,
            first: results::new_histogram(),
            each: results::new_histogram(),
        }
    }
}

impl Streamed {
    /// A message came `latency` ns after its call's intended start; `first` of its call.
    pub fn message(&mut self, latency: u64, first: bool) {
        let latency = latency.max(1);
        self.messages += 1;
        self.each.saturating_record(latency);
        if first {
            self.calls += 1;
            self.first.saturating_record(latency);
        }
    }

    pub fn add(&mut self, other: &Streamed) {
        self.calls += other.calls;
        self.messages += other.messages;
        (self.first.add(&other.first)).expect("histograms of one range always merge");
        (self.each.add(&other.each)).expect("histograms of one range always merge");
    }
}
