fn main() {
    glue::native::main(&hello_sdk::ENDPOINT)
}
