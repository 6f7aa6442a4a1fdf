//! Scrubbing throughput: 1,000 secrets of 40 bytes, every encoding on, over ~64 MiB of log-like
//! text with a few secrets inside, beside a plain copy and a `memchr` scan of the same text
//! measured in the same run. Run with `cargo bench -p redact` (release profile).

use std::hint::black_box;
use std::time::{Duration, Instant};

use redact::testing::MemorySource;
use redact::{RunSecrets, SecretRequest};

const SECRET_COUNT: usize = 1_000;
const SECRET_BYTES: usize = 40;
const SHORT_SECRET_BYTES: usize = 12;
const TEXT_BYTES: usize = 64 * 1024 * 1024;
const ROUNDS: usize = 3;

/// A small deterministic generator (xorshift), so the bench needs no randomness crate.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
}

fn secrets(generator: &mut Xorshift, secret_bytes: usize) -> Vec<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.";
    (0..SECRET_COUNT)
        .map(|_| {
            (0..secret_bytes)
                .map(|_| char::from(ALPHABET[generator.below(ALPHABET.len())]))
                .collect()
        })
        .collect()
}

fn log_text(generator: &mut Xorshift, secrets: &[String]) -> String {
    const WORDS: &[&str] = &[
        "INFO",
        "WARN",
        "request",
        "handled",
        "in",
        "ms",
        "user",
        "fetched",
        "rows",
        "from",
        "orders",
        "the",
        "step",
        "wrote",
        "output",
        "status=200",
        "GET",
        "/api/v1/items",
        "retrying",
        "connection",
        "pool",
        "size",
        "42",
        "3.14",
        "2026-11-29T10:00:00Z",
        "ok",
        "{\"id\":17,\"name\":\"widget\"}",
        "Traceback",
        "File",
        "line",
        "KeyError",
        "total",
    ];
    let mut text = String::with_capacity(TEXT_BYTES + 1024);
    let mut lines = 0_usize;
    while text.len() < TEXT_BYTES {
        let words = 6 + generator.below(10);
        for index in 0..words {
            if index > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[generator.below(WORDS.len())]);
        }
        lines += 1;
        // A few secrets inside: one every ~100,000 lines.
        if lines.is_multiple_of(100_000) {
            text.push_str(" token=");
            text.push_str(&secrets[generator.below(secrets.len())]);
        }
        text.push('\n');
    }
    text
}

fn megabytes_per_second(bytes: usize, elapsed: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / elapsed.as_secs_f64()
}

fn best_of<F: FnMut()>(mut measured: F) -> Duration {
    (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            measured();
            started.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let mut generator = Xorshift(0x5eed_cafe_f00d_d00d);
    let secret_values = secrets(&mut generator, SECRET_BYTES);
    let text = log_text(&mut generator, &secret_values);
    println!(
        "scrub bench: {} MiB of log-like text with a few secrets inside",
        text.len() / (1024 * 1024)
    );
    let copy = best_of(|| {
        black_box(black_box(text.as_bytes()).to_vec());
    });
    let memchr_scan = best_of(|| {
        black_box(memchr::memchr_iter(b'\n', black_box(text.as_bytes())).count());
    });
    println!(
        "  baseline plain copy:    {:>8.0} MB/s",
        megabytes_per_second(text.len(), copy)
    );
    println!(
        "  baseline memchr scan:   {:>8.0} MB/s",
        megabytes_per_second(text.len(), memchr_scan)
    );
    println!(
        "{SECRET_COUNT} secrets x {SECRET_BYTES} bytes, all encodings (target: scrub >= 500 MB/s):"
    );
    measure(&text, &secret_values);
    // Not the target, shown so the cost of short values is known: every form of a 12-byte value
    // is shorter than the block filter's minimum, so the short-form automaton walks every byte.
    let short_values = secrets(&mut generator, SHORT_SECRET_BYTES);
    println!(
        "{SECRET_COUNT} secrets x {SHORT_SECRET_BYTES} bytes, all encodings (for information):"
    );
    measure(&text, &short_values);
}

fn measure(text: &str, secret_values: &[String]) {
    let source = MemorySource::new();
    for (index, value) in secret_values.iter().enumerate() {
        source.set_secret("bench-account", &format!("secret-{index}"), value);
    }
    let request = SecretRequest {
        secrets: (0..secret_values.len())
            .map(|index| format!("secret-{index}"))
            .collect(),
        ..SecretRequest::default()
    };
    let build_started = Instant::now();
    let sets = redact::ScrubSets::new(std::sync::Arc::new(source));
    let run_secrets = match RunSecrets::collect(
        &ids::RunId::parse("bench-run").unwrap_or_else(|error| panic!("{error}")),
        &ids::AccountId::parse("bench-account").unwrap_or_else(|error| panic!("{error}")),
        &sets,
        &request,
    ) {
        Ok(run_secrets) => run_secrets,
        Err(error) => {
            eprintln!("the bench source did not resolve its secrets: {error}");
            std::process::exit(1);
        }
    };
    let redactor = run_secrets.redactor();
    let build_elapsed = build_started.elapsed();
    let scrub = best_of(|| {
        black_box(redactor.scrub(black_box(text)));
    });
    let masked_count = redactor.scrub(text).as_str().matches(redact::MASK).count();
    let holds = best_of(|| {
        black_box(redactor.holds_secret(black_box(text.as_bytes())));
    });
    let stream = best_of(|| {
        let mut scrubber = redactor.stream();
        for chunk in text.as_bytes().chunks(64 * 1024) {
            // Chunks are cut on byte counts; the text is ASCII so every cut is a char boundary.
            black_box(scrubber.push(std::str::from_utf8(chunk).unwrap_or_default()));
        }
        black_box(scrubber.finish());
    });
    println!(
        "  automaton build:        {:>8.1} ms",
        build_elapsed.as_secs_f64() * 1000.0
    );
    println!(
        "  scrub (one shot):       {:>8.0} MB/s ({masked_count} masks)",
        megabytes_per_second(text.len(), scrub)
    );
    println!(
        "  holds_secret:           {:>8.0} MB/s",
        megabytes_per_second(text.len(), holds)
    );
    println!(
        "  stream (64 KiB chunks): {:>8.0} MB/s",
        megabytes_per_second(text.len(), stream)
    );
}
