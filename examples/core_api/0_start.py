"""Stage 0: a plain training loop that knows nothing about trialkit (seed 001, 0_start)."""

import logging
import time


def main() -> None:
    x = 0
    for batch in range(100):
        x += 1
        time.sleep(0.01)
        logging.info(f"batch={batch} x={x}")
        if batch % 10 == 9:
            logging.info(f"training: batch={batch} x={x}")
    logging.info(f"validation: x={x}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
