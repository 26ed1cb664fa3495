fn main() {
    glue::native::main(&echo::ENDPOINT)
}
