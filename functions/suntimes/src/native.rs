fn main() {
    glue::native::main(&suntimes::ENDPOINT)
}
