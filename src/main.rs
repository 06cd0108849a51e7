fn main() {
    eprintln!("error: the arrowsmith command line is not written yet");
    std::process::exit(2);
}
