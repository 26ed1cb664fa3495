//! One request's pure computation (`suntimes::compute`), and the whole handler
//! (parse + compute + JSON) for comparison. Target: ≤ 20 µs per request natively.

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use glue::Head;

const QUERY: &str = "lat=51.5074&lon=-0.1278&date=2024-06-21&tz=Europe/London";

fn bench(c: &mut Criterion) {
    let request = suntimes::Request::parse(QUERY).unwrap();
    c.bench_function("compute London 2024-06-21", |b| {
        b.iter(|| suntimes::compute(black_box(&request)));
    });
    let tromso =
        suntimes::Request::parse("lat=69.6492&lon=18.9553&date=2024-12-21&tz=Europe/Oslo").unwrap();
    c.bench_function("compute Tromso 2024-12-21", |b| {
        b.iter(|| suntimes::compute(black_box(&tromso)));
    });
    let head = Head {
        method: "GET".into(),
        path: "/suntimes".into(),
        query: QUERY.into(),
        ..Head::default()
    };
    c.bench_function("handler (parse + compute + JSON)", |b| {
        b.iter(|| suntimes::suntimes(black_box(&head)).unwrap());
    });
}

/// The parts: one lunar and one solar series evaluation.
fn parts(c: &mut Criterion) {
    let nut = suntimes::earth::nutation(0.24);
    c.bench_function("moon::place", |b| {
        b.iter(|| suntimes::moon::place(black_box(0.24), &nut));
    });
    c.bench_function("sun::place", |b| {
        b.iter(|| suntimes::sun::place(black_box(0.24), &nut));
    });
}

criterion_group!(benches, bench, parts);
criterion_main!(benches);
