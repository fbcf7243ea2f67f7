//! Scratch (not committed): render every artifact it can into /tmp/gen.
fn main() {
    let out = std::path::Path::new("/tmp/gen");
    for a in figures::ARTIFACTS {
        let t = std::time::Instant::now();
        match (a.render)() {
            Ok(text) => {
                let p = out.join(a.path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, text).unwrap();
                println!("ok   {} {:?}", a.path, t.elapsed());
            }
            Err(e) => println!("ERR  {}: {e:#}", a.path),
        }
    }
}
