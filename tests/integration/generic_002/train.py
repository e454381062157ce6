# train.py (seed 002 through "Step 3: Fault-Tolerance" and "Pause and Resume"; the draft's
# typos fixed, and training resumes after the checkpointed epoch instead of repeating it)

import random

import determined as det
import torch
from data import build_datasets
from model import build_model, eval_model, train_model

if __name__ == "__main__":
    # initialize a context object for accessing the Generic API
    context = det.generic.init()

    # seed RNGs based on context-provided seed
    seed = context.training.trial_seed
    random.seed(seed)
    torch.random.manual_seed(seed)

    # read hyperparameters from the context object
    hparams = context.training.hparams
    model, loss_fn, opt = build_model(hparams["learning_rate"])
    train_data, eval_data = build_datasets(hparams["batch_size"])

    last_epoch = -1
    batches_trained = 0

    # read state from the last checkpoint
    if context.latest_checkpoint is not None:
        with context.latest_checkpoint as path:
            state = torch.load(f"{path}/my_checkpoint")
        model.load_state_dict(state["model"])
        last_epoch = state["epoch"]
        batches_trained = state["batches_trained"]
        print(f"resumed after epoch {last_epoch}")

    # basic searcher API: just find out how long to train for
    searcher_op = context.training.basic_search()

    for epoch in range(last_epoch + 1, searcher_op.epochs):
        if context.should_preempt():
            break

        train_loss = train_model(model, loss_fn, opt, train_data)
        batches_trained += len(train_data)
        context.training.report_training_metrics(
            batches_trained=batches_trained, metrics={"loss": train_loss}
        )

        eval_loss = eval_model(model, loss_fn, eval_data)
        context.training.report_validation_metrics(
            batches_trained=batches_trained, metrics={"loss": eval_loss}
        )

        if epoch == searcher_op.epochs - 1:
            searcher_op.complete(eval_loss)
        else:
            searcher_op.report_progress(epoch + 1)

        state = {"model": model.state_dict(), "epoch": epoch, "batches_trained": batches_trained}
        with context.checkpoint.save_path() as path:
            torch.save(state, f"{path}/my_checkpoint")
