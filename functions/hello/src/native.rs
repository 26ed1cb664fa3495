fn main() {
    glue::native::main(&hello::ENDPOINT)
}
